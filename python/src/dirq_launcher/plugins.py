"""Plugin discovery: installed distributions with an entry point in group ``dirq``.

A plugin's entry point names a module (``my_plugin = "dirq_plugin_x"``) that ships a
``dirq.toml`` fragment beside its ``__init__.py``. Fragments are handed to the CLI as ``-c``
files after the user's own. The npm launcher (packages/dirq/src/launcher/plugin-args.ts)
composes the command line by the same rules: keep the two in step.
"""

import importlib.util
import os
import re
import sys
from importlib import metadata
from typing import List, NamedTuple, Optional, Sequence, Tuple

GROUP = "dirq"
FRAGMENT = "dirq.toml"
NO_PLUGIN_FLAG = "--no-plugin"

CONFIG_COMMANDS = {"query", "server", "repl"}
# `sdk-stdio` (the Python SDK's child) gets its configs in frames; the SDKs never discover.
NO_CONFIG_FIRST = {"init", "help", "completion", "sdk-stdio", "--help", "-h", "--version", "-V"}
HELP_FLAGS = {"--help", "-h"}


class LauncherError(Exception):
    """A launcher failure: printed as ``dirq: <message>``, exit 1. Names the package at fault."""


class Plugin(NamedTuple):
    distribution: str
    entry_point: str
    module: str
    config: str


def plugins_disabled_by_env(value: Optional[str]) -> bool:
    """``DIRQ_NO_PLUGIN=1`` (also ``true``, ``yes``, any case) turns discovery off."""
    return (value or "").strip().lower() in ("1", "true", "yes")


def take_no_plugin_flag(argv: Sequence[str]) -> Tuple[List[str], bool]:
    """Removes ``--no-plugin`` (before a ``--`` that ends the options); says if it was there."""
    argv = list(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    options = [arg for arg in argv[:end] if arg != NO_PLUGIN_FLAG]
    return options + argv[end:], len(options) != end


def _after_last_config(argv: Sequence[str], end: int) -> int:
    after = -1
    i = 0
    while i < end:
        arg = argv[i]
        if arg in ("-c", "--config"):
            after = min(i + 2, end)
            i += 1
        elif arg.startswith("--config=") or (arg.startswith("-c") and len(arg) > 2):
            after = i + 1
        i += 1
    return after


def takes_plugin_configs(argv: Sequence[str]) -> bool:
    """Whether the command reads configs: ``init``, ``completion``, ``--version`` and any
    ``--help`` do not, so they neither discover plugins nor fail on a broken one."""
    if argv and argv[0] in NO_CONFIG_FIRST:
        return False
    end = list(argv).index("--") if "--" in argv else len(argv)
    return not any(arg in HELP_FLAGS for arg in argv[:end])


def with_plugin_configs(argv: Sequence[str], fragments: Sequence[str]) -> List[str]:
    """The command line with ``-c <fragment>`` per plugin after the user's last ``-c``, else
    right after the subcommand or the SQL, else (a bare ``dirq`` or options alone: the REPL)
    at the end, before any ``--``. Commands that read no config (``takes_plugin_configs``)
    are left alone."""
    argv = list(argv)
    if not fragments or not takes_plugin_configs(argv):
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    at = _after_last_config(argv, end)
    if at == -1:
        first = argv[0] if argv else None
        options_only = first is None or (first.startswith("-") and not re.search(r"\s", first))
        if options_only:
            at = end
        else:
            at = 1 if first in CONFIG_COMMANDS else min(1, end)
    added = [part for fragment in fragments for part in ("-c", fragment)]
    return argv[:at] + added + argv[at:]


def _entry_points():
    points = metadata.entry_points()
    if hasattr(points, "select"):
        return list(points.select(group=GROUP))
    return list(points.get(GROUP, []))  # Python 3.8 and 3.9


def _distribution_name(point) -> str:
    dist = getattr(point, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    if name:
        return name
    # Python 3.8/3.9 entry points do not know their distribution: find it.
    for dist in metadata.distributions():
        for candidate in dist.entry_points:
            if candidate.group == GROUP and candidate.name == point.name:
                return dist.metadata["Name"]
    return point.name


def _module_folder(module: str) -> Optional[str]:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return os.path.dirname(spec.origin)
    return None


def discover_plugins() -> List[Plugin]:
    """Every installed plugin, in a stable order (distribution name, then entry point name).
    A plugin whose module or fragment is missing raises ``LauncherError`` naming it."""
    points = {}
    for point in _entry_points():
        distribution = _distribution_name(point)
        key = (re.sub(r"[-_.]+", "-", distribution).lower(), point.name)
        points.setdefault(key, (distribution, point))
    plugins = []
    for key in sorted(points):
        distribution, point = points[key]
        module = point.value.split(":", 1)[0].strip()
        where = f"plugin {distribution} (entry point {point.name} = {point.value})"
        folder = _module_folder(module)
        if folder is None:
            raise LauncherError(
                f"{where}: module {module} is not installed; reinstall or uninstall "
                f"{distribution}, or run with --no-plugin"
            )
        config = os.path.join(folder, FRAGMENT)
        if not os.path.isfile(config):
            raise LauncherError(
                f"{where}: module {module} ships no {FRAGMENT} (looked for {config}); "
                f"reinstall or uninstall {distribution}, or run with --no-plugin"
            )
        plugins.append(Plugin(distribution, point.name, module, config))
    return plugins


if __name__ == "__main__":  # pragma: no cover - a debugging aid
    for plugin in discover_plugins():
        sys.stdout.write(f"{plugin.distribution}\t{plugin.config}\n")
