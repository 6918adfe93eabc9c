import { spawn } from "node:child_process";
import type { Socket } from "node:net";
import { HOOK_MARK_VARIABLE } from "./hook-mark.js";
import type { ReaperMessage } from "./reaper.js";

/**
 * The reaper as a POSIX shell program (see reaper.ts for what a reaper does). Every server,
 * REPL and SDK program starts one, and a Node.js reaper costs a whole Node start and heap for a
 * process that only waits; a shell costs next to nothing.
 *
 * Its standard input is a pipe from its parent, one message a line: `+<pid>` a hook or a query
 * process started, `-<pid>` it ended, `d<folder>` a folder to remove, `r<folder>` one removed
 * already. When the parent ends, however it ends, the kernel closes the pipe's other end and
 * `read` meets its end. Then it kills the processes still running (each leads its own process
 * group: the group, then the process), and on Linux every process whose environment carries the
 * parent's mark (a hook the parent was killed before it could report, and what hooks started
 * outside their group), and removes the folders. The lists are kept in variables, edited
 * without a command, so a message costs no process.
 *
 * Arguments: `$1` the mark, `$2` the first folder.
 */
const REAPER_SCRIPT = `# dirq's reaper (shell-reaper.ts in dirq): $1 is the mark, $2 the first folder
trap '' INT TERM HUP
set -f
nl='
'
mark=$1
hooks=' '
folders=$nl$2$nl
while IFS= read -r line; do
  value=\${line#?}
  case $line in
    +*) hooks="$hooks$value " ;;
    -*) case $hooks in *" $value "*)
          before=\${hooks%%" $value "*}; after=\${hooks#*" $value "}; hooks="$before $after" ;;
        esac ;;
    d*) folders="$folders$value$nl" ;;
    r*) case $folders in *"$nl$value$nl"*)
          before=\${folders%%"$nl$value$nl"*}; after=\${folders#*"$nl$value$nl"}
          folders="$before$nl$after" ;;
        esac ;;
  esac
done
for pid in $hooks; do
  kill -s KILL -- "-$pid" 2>/dev/null; kill -s KILL "$pid" 2>/dev/null
done
if [ -n "$mark" ] && [ -d /proc/self ]; then
  set +f
  marked=$(grep -lzxF "${HOOK_MARK_VARIABLE}=$mark" /proc/[0-9]*/environ 2>/dev/null)
  set -f
  for file in $marked; do
    pid=\${file#/proc/}; pid=\${pid%/environ}
    kill -s KILL -- "-$pid" 2>/dev/null; kill -s KILL "$pid" 2>/dev/null
  done
fi
IFS=$nl
for dir in $folders; do
  # A query process still closing its connection may touch SQLite's files there for a moment.
  tries=0
  while [ -e "$dir" ] && ! rm -rf -- "$dir" 2>/dev/null && [ "$tries" -lt 10 ]; do
    tries=$((tries + 1)); sleep 0.1
  done
done
`;

/** Starts the shell reaper for `directory`; returns how to tell it of processes and folders. */
export function startShellReaper(
  directory: string,
  mark: string,
  environment: NodeJS.ProcessEnv,
): (message: ReaperMessage) => void {
  // A name with a line break would be read as two folders: it is left to the clean stop.
  const first = directory.includes("\n") ? "" : directory;
  const reaper = spawn("/bin/sh", ["-c", REAPER_SCRIPT, "dirq-reaper", mark, first], {
    stdio: ["pipe", "ignore", "ignore"],
    env: environment,
    // Its own process group: a SIGKILL of this process's whole group (a cancelled CI job, a
    // container stop, `kill -9 -- -<pgid>`) must not take the reaper with it.
    detached: true,
  });
  // A pipe to a child is a socket, which can be unref'd.
  const input = reaper.stdin as Socket | null;
  reaper.on("error", () => {});
  input?.on("error", () => {});
  // It never keeps this process alive: it waits for this process's end, not the reverse.
  reaper.unref();
  input?.unref();
  return (message) => {
    const line = messageLine(message);
    if (line !== null && input !== null && input.writable) input.write(line);
  };
}

/**
 * A message as the script reads it, or null for a folder whose name holds a line break (it
 * cannot be told; this process still removes it at a clean stop).
 */
function messageLine(message: ReaperMessage): string | null {
  if (message.started !== undefined) return `+${message.started}\n`;
  if (message.ended !== undefined) return `-${message.ended}\n`;
  const folder = message.folder ?? message.removed;
  if (folder === undefined || folder.includes("\n")) return null;
  return `${message.folder !== undefined ? "d" : "r"}${folder}\n`;
}
