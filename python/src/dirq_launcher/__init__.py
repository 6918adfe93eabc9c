"""The dirq launcher for Python environments: finds the dirq CLI and its plugins, then runs it."""

__version__ = "0.1.0"
