"""The ``dirq`` console script: finds the dirq CLI, adds plugin configs, and runs it.

The CLI is, in order: ``DIRQ_BIN`` when set; the CLI bundled in this package's data
(``dirq_launcher/_cli/bin/dirq.cjs``); the npm package ``dirq`` of this launcher's version
that an earlier run installed into the cache folder; ``dirq`` on ``PATH`` (never this script
itself); else, on the first run, that npm package, installed into the cache folder with the
user's npm (as the pyright launcher does), so one ``pipx install dirq`` is enough. A
JavaScript CLI runs on Node.js (``DIRQ_NODE``, else ``node`` on ``PATH``), 20.11 or later.

What that first run installs is pinned: the exact npm tarball of ``dirq@<version>`` whose
sha512 integrity the release build recorded (``npm-package.json`` beside this module; the
rule is written down in the repository's packages/dirq/docs/install.md, "Pinning"). The
tarball is fetched with the user's npm, its integrity compared with the record, and only then
installed; a launcher without the record installs nothing.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, NoReturn, Optional, Sequence, Tuple

from dirq_launcher import __version__
from dirq_launcher.plugins import (
    LauncherError,
    discover_plugins,
    plugins_disabled_by_env,
    take_no_plugin_flag,
    takes_plugin_configs,
    with_plugin_configs,
)

MIN_NODE = (20, 11)
BUNDLED_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cli", "bin", "dirq.cjs")
# Which npm release this launcher installs: written by the release build (release/build.mjs).
PINNED_RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npm-package.json")
STAGING_PREFIX = ".installing-"
# A staging folder this old belongs to a run that was killed: the next install removes it.
STALE_STAGING_SECONDS = 24 * 60 * 60
JS_SUFFIXES = (".js", ".mjs", ".cjs")
NODE_NEEDED = (
    "dirq's CLI needs Node.js 20.11 or later, with npm: install Node.js 20.11 or later "
    "(the LTS from https://nodejs.org/en/download, or your system's nodejs and npm packages "
    "when they are 20.11 or later)"
)


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


def cache_folder() -> str:
    """Where the launcher keeps what it installs: ``DIRQ_CACHE_DIR``, else the user's cache
    folder (``$XDG_CACHE_HOME/dirq``, ``~/.cache/dirq``; ``%LOCALAPPDATA%\\dirq`` on Windows)."""
    configured = os.environ.get("DIRQ_CACHE_DIR", "").strip()
    if configured:
        return configured
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return os.path.join(os.environ["LOCALAPPDATA"], "dirq")
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "dirq")


def _npm_prefix() -> str:
    """The npm prefix this launcher's version installs the CLI into (one per version)."""
    return os.path.join(cache_folder(), "npm", __version__)


def _cli_in(prefix: str) -> str:
    return os.path.join(prefix, "node_modules", "dirq", "bin", "dirq.cjs")


def find_cli() -> Optional[str]:
    """The CLI to run: ``DIRQ_BIN``, else the bundled one, else the one installed into the
    cache folder, else ``dirq`` on ``PATH``; ``None`` when there is none yet."""
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
    if os.path.isfile(_cli_in(_npm_prefix())):
        return _cli_in(_npm_prefix())
    return _dirq_on_path()


def _find_npm(node: str) -> Optional[str]:
    """``DIRQ_NPM``, else the npm beside the Node.js that runs the CLI, else npm on PATH."""
    configured = os.environ.get("DIRQ_NPM", "").strip()
    if configured:
        return configured
    beside = shutil.which("npm", path=os.path.dirname(node))
    return beside or shutil.which("npm")


def pinned_integrity() -> str:
    """The sha512 integrity of the npm tarball of ``dirq@<this version>`` that this launcher
    installs, from its record; a launcher without one (built from a checkout, not by the
    release build) installs nothing."""
    package = f"dirq@{__version__}"
    try:
        with open(PINNED_RECORD, encoding="utf-8") as handle:
            record = json.load(handle)
    except FileNotFoundError:
        raise LauncherError(
            "this launcher was built without the record of the npm release it installs "
            f"(dirq_launcher/npm-package.json), so it installs nothing: set DIRQ_BIN to a dirq "
            f"CLI (bin/dirq.cjs of the npm package {package}), or install the launcher from a "
            "release (pipx install dirq)"
        ) from None
    except (OSError, ValueError) as error:
        raise LauncherError(f"cannot read {PINNED_RECORD}: {error}") from None
    integrity = record.get("integrity") if isinstance(record, dict) else None
    if (
        not isinstance(record, dict)
        or record.get("name") != "dirq"
        or record.get("version") != __version__
        or not isinstance(integrity, str)
        or not integrity.startswith("sha512-")
    ):
        raise LauncherError(
            f"{PINNED_RECORD} does not pin {package} (it holds {json.dumps(record)}): "
            "reinstall the launcher from a release"
        )
    return integrity


def integrity_of(path: str) -> str:
    """A file's sha512 integrity, as npm writes it (``sha512-<base64>``)."""
    digest = hashlib.sha512()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha512-" + base64.b64encode(digest.digest()).decode("ascii")


def _remove_stale_staging(parent: str) -> None:
    now = time.time()
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        try:
            stale = now - os.stat(path).st_mtime > STALE_STAGING_SECONDS
        except OSError:
            continue
        if name.startswith(STAGING_PREFIX) and stale:
            shutil.rmtree(path, ignore_errors=True)


def _run_npm(npm: str, args: List[str], cwd: str, env: Dict[str, str], package: str) -> None:
    """Runs npm with its output on stderr (stdout stays the CLI's); fails naming the step."""
    try:
        result = subprocess.run([npm, *args], cwd=cwd, stdout=sys.stderr, env=env, check=False)
    except OSError as error:
        raise LauncherError(f"cannot run {npm}: {error.strerror or error}") from None
    if result.returncode != 0:
        raise LauncherError(
            f"installing the npm package {package} failed (npm {args[0]} exited with "
            f"{result.returncode}, its messages are above): fix what npm says and run dirq "
            f"again, or install the CLI yourself (npm install -g {package}) and set DIRQ_BIN "
            "to its bin/dirq.cjs"
        )


def _fetch_pinned(npm: str, staging: str, env: Dict[str, str], source: str, integrity: str) -> str:
    """``npm pack <source>`` into the staging folder (the user's registry, proxy and
    certificates apply), then the tarball's integrity against the pinned one."""
    download = os.path.join(staging, ".tarball")
    os.mkdir(download)
    args = ["pack", source, "--loglevel=warn", "--pack-destination", download]
    _run_npm(npm, args, staging, env, source)
    tarballs = [name for name in os.listdir(download) if name.endswith(".tgz")]
    if len(tarballs) != 1:
        raise LauncherError(f"npm pack {source} left no single tarball in {download}")
    tarball = os.path.join(download, tarballs[0])
    found = integrity_of(tarball)
    if found != integrity:
        raise LauncherError(
            f"npm served a {source} tarball whose integrity is {found}, not {integrity}, the "
            "release this launcher was built for; nothing was installed. Check the registry "
            "npm uses (npm config get registry), or set DIRQ_BIN to a dirq CLI you trust"
        )
    return tarball


def install_cli(node: str) -> str:
    """Installs the npm release of ``dirq`` this launcher pins into the cache folder with the
    user's npm, and returns its CLI. ``DIRQ_NPM_PACKAGE`` says where npm fetches it from (a
    registry spec, a tarball's path or URL); the bytes must be the pinned ones all the same.
    npm's own output goes to stderr."""
    integrity = pinned_integrity()
    package = f"dirq@{__version__}"
    source = os.environ.get("DIRQ_NPM_PACKAGE", "").strip() or package
    prefix = _npm_prefix()
    npm = _find_npm(node)
    if npm is None:
        raise LauncherError(
            f"npm not found: on its first run dirq installs its CLI (the npm package {package}) "
            f"with npm, which comes with Node.js; {NODE_NEEDED}. Or install the CLI yourself "
            f"(npm install -g {package}) or set DIRQ_BIN to its bin/dirq.cjs"
        )
    parent = os.path.dirname(prefix)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise LauncherError(
            f"cannot make the folder {parent} for the dirq CLI: {error.strerror or error}: "
            "set DIRQ_CACHE_DIR to a folder dirq may write"
        ) from None
    _remove_stale_staging(parent)
    sys.stderr.write(
        f"dirq: first run: installing the dirq CLI (npm package {package}) into {prefix} "
        "with npm; later runs use it\n"
    )
    sys.stderr.flush()
    # Installed beside its final place, then renamed: an interrupted install leaves nothing
    # that a later run would take for a CLI.
    staging = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent)
    env = dict(os.environ)
    # npm and the package's install scripts run `node`: the one that will run the CLI.
    env["PATH"] = os.pathsep.join([os.path.dirname(node), env.get("PATH", "")])
    try:
        tarball = _fetch_pinned(npm, staging, env, source, integrity)
        install = ["install", "--no-audit", "--no-fund", "--prefix", staging, tarball]
        _run_npm(npm, install, staging, env, package)
        shutil.rmtree(os.path.dirname(tarball), ignore_errors=True)
        if not os.path.isfile(_cli_in(staging)):
            raise LauncherError(f"npm finished, but {staging} holds no dirq CLI")
        try:
            os.rename(staging, prefix)
        except OSError:
            pass  # Another dirq finished the same install first: use that one.
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not os.path.isfile(_cli_in(prefix)):
        raise LauncherError(
            f"the dirq CLI is missing from {prefix} after installing it; remove that folder "
            "and run dirq again"
        )
    return _cli_in(prefix)


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
            f"Node.js not found ({where}): {NODE_NEEDED}; or set DIRQ_NODE to its path"
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


def command_line(argv: Sequence[str]) -> Tuple[List[str], Dict[str, str]]:
    """The full command to run (the CLI, on Node when it is JavaScript, with plugin configs)
    and the environment to run it in."""
    args, no_plugin = take_no_plugin_flag(argv)
    env = dict(os.environ)
    if no_plugin:
        # The npm CLI's own launcher discovers npm plugins: tell it too.
        env["DIRQ_NO_PLUGIN"] = "1"
    elif not plugins_disabled_by_env(env.get("DIRQ_NO_PLUGIN")) and takes_plugin_configs(args):
        plugins = discover_plugins()
        args = with_plugin_configs(args, [plugin.config for plugin in plugins])
        if plugins:
            # A plugin's `python3` hooks run with this interpreter, which can import the
            # plugin (under pipx or uv, the python3 on PATH cannot).
            env["DIRQ_PLUGIN_PYTHON"] = sys.executable
            env["DIRQ_PLUGIN_PYTHON_DIRS"] = os.pathsep.join(
                os.path.dirname(plugin.config) for plugin in plugins
            )
    cli = find_cli()
    if cli is None:
        node = find_node()
        return [node, install_cli(node), *args], env
    if _runs_on_node(cli):
        return [find_node(), cli, *args], env
    return [cli, *args], env


def _run(command: List[str], env: Dict[str, str]) -> NoReturn:
    if os.name == "posix":
        # Replace this process: signals, stdio and the exit code are the CLI's own.
        os.execve(command[0], command, env)
    sys.exit(subprocess.call(command, env=env))


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    try:
        command, env = command_line(sys.argv[1:] if argv is None else argv)
    except LauncherError as error:
        sys.stderr.write(f"dirq: {error}\n")
        sys.exit(1)
    try:
        _run(command, env)
    except OSError as error:
        sys.stderr.write(f"dirq: cannot run {command[0]}: {error.strerror or error}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
