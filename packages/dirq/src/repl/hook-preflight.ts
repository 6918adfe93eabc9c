import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { DirqError } from "../errors.js";
import { parseHookCommand } from "../parse/hook-command.js";

function isExecutableFile(path: string): "ok" | "missing" | "not-executable" {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (!stats?.isFile()) return "missing";
  try {
    accessSync(path, constants.X_OK);
    return "ok";
  } catch {
    return "not-executable";
  }
}

/**
 * Checks, before the first prompt, that an `--on-file` command can start: its program is
 * found (on `PATH`, or relative to the root, where hooks run) and executable. A one-shot
 * query learns this when the first hook starts; a session must not open and then fail every
 * statement. Throws the same `HOOK_START_FAILED` diagnostic the hook runner gives.
 */
export function checkHookCanStart(commandText: string, root: string): void {
  const command = parseHookCommand(commandText);
  const program = command.argv[0] as string;
  let found: "ok" | "missing" | "not-executable";
  if (program.includes("/")) {
    found = isExecutableFile(isAbsolute(program) ? program : resolve(root, program));
  } else {
    const dirs = (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "");
    const results = dirs.map((dir) => isExecutableFile(join(dir, program)));
    found = results.includes("ok")
      ? "ok"
      : results.includes("not-executable")
        ? "not-executable"
        : "missing";
  }
  if (found === "ok") return;
  const why =
    found === "missing"
      ? `program '${program}' not found (check the name, or give its path)`
      : `program '${program}' is not executable (chmod +x it, or run it through its interpreter)`;
  throw new DirqError("HOOK_START_FAILED", `on-file command '${command.text}': ${why}`);
}
