"""The ``dirq`` console script: finds the dirq CLI, adds plugin configs, and runs it.

The CLI is, in order: ``DIRQ_BIN`` when set; the CLI bundled in this package's data
(``dirq_launcher/_cli/bin/dirq.cjs``); ``dirq`` on ``PATH`` (never this script itself). A
JavaScript CLI runs on Node.js (``DIRQ_NODE``, else ``node`` on ``PATH``), 20.11 or later.
"""

import os
import re
import shutil
import subprocess
import sys
from typing import List, NoReturn, Optional, Sequence

from dirq_launcher.plugins import (
    LauncherError,
    discover_plugins,
    plugins_disabled_by_env,
    take_no_plugin_flag,
    with_plugin_configs,
)

MIN_NODE = (20, 11)
BUNDLED_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cli", "bin", "dirq.cjs")
JS_SUFFIXES = (".js", ".mjs", ".cjs")


def _is_this_launcher(path: str) -> bool:
    """A console script of this package (a ``dirq`` on PATH that would start us again)."""
    try:
        if os.path.realpath(path) == os.path.realpath(sys.argv[0]):
            return True
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b"dirq_launcher" in head


def _runs_on_node(path: str) -> bool:
    if path.endswith(JS_SUFFIXES):
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _dirq_on_path() -> Optional[str]:
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder:
            continue
        candidate = shutil.which("dirq", path=folder)
        if candidate and not _is_this_launcher(candidate):
            return candidate
    return None


def find_cli() -> str:
    """The CLI to run: ``DIRQ_BIN``, else the bundled one, else ``dirq`` on ``PATH``."""
    configured = os.environ.get("DIRQ_BIN", "").strip()
    if configured:
        if not os.path.isfile(configured):
            raise LauncherError(
                f"DIRQ_BIN is set to {configured}, which is not a file: point it at the dirq "
                "CLI (bin/dirq.cjs of the npm package), or unset it"
            )
        return configured
    if os.path.isfile(BUNDLED_CLI):
        return BUNDLED_CLI
    found = _dirq_on_path()
    if found:
        return found
    raise LauncherError(
        "no dirq CLI found: this package bundles none, DIRQ_BIN is not set and there is no "
        "dirq on PATH; install the npm package (npm install -g dirq) or set DIRQ_BIN to its "
        "bin/dirq.cjs"
    )


def _node_version(node: str) -> Optional[tuple]:
    try:
        result = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", result.stdout.strip())
    return tuple(int(part) for part in match.groups()) if match else None


def find_node() -> str:
    """Node.js, 20.11 or later: ``DIRQ_NODE``, else ``node`` on ``PATH``."""
    configured = os.environ.get("DIRQ_NODE", "").strip()
    node = configured or shutil.which("node")
    if not node or (configured and not os.path.isfile(configured)):
        where = f"DIRQ_NODE ({configured}) does not exist" if configured else "no node on PATH"
        raise LauncherError(
            f"Node.js not found ({where}): dirq's CLI needs Node.js 20.11 or later; "
            "install it (https://nodejs.org) or set DIRQ_NODE to its path"
        )
    version = _node_version(node)
    if version is None:
        raise LauncherError(
            f"{node} does not run as Node.js (node --version failed): dirq's CLI needs "
            "Node.js 20.11 or later; set DIRQ_NODE to a working node"
        )
    if version[:2] < MIN_NODE:
        shown = ".".join(str(part) for part in version)
        raise LauncherError(
            f"Node.js {shown} at {node} is too old: dirq's CLI needs 20.11 or later; "
            "upgrade it, or set DIRQ_NODE to a newer node"
        )
    return node


def command_line(argv: Sequence[str]) -> List[str]:
    """The full command to run: the CLI (on Node when it is JavaScript) with plugin configs."""
    args, no_plugin = take_no_plugin_flag(argv)
    if not no_plugin and not plugins_disabled_by_env(os.environ.get("DIRQ_NO_PLUGIN")):
        args = with_plugin_configs(args, [plugin.config for plugin in discover_plugins()])
    cli = find_cli()
    if _runs_on_node(cli):
        return [find_node(), cli, *args]
    return [cli, *args]


def _run(command: List[str]) -> NoReturn:
    if os.name == "posix":
        # Replace this process: signals, stdio and the exit code are the CLI's own.
        os.execv(command[0], command)
    sys.exit(subprocess.call(command))


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    try:
        command = command_line(sys.argv[1:] if argv is None else argv)
    except LauncherError as error:
        sys.stderr.write(f"dirq: {error}\n")
        sys.exit(1)
    try:
        _run(command)
    except OSError as error:
        sys.stderr.write(f"dirq: cannot run {command[0]}: {error.strerror or error}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
