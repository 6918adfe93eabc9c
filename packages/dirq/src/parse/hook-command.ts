import { isAbsolute, resolve } from "node:path";
// A static import, so the CLI bundle carries it: loaded through `require` at run time it cost
// a worker's early start several milliseconds.
import { parse as parseShellWords } from "shell-quote";
import { DirqError } from "../errors.js";

/** A parsed on-file command: argv with `{path}` and `{root}` still in place. */
export interface HookCommand {
  /** The command as written, for messages. */
  text: string;
  argv: string[];
}

function invalid(text: string, why: string): DirqError {
  return new DirqError("HOOK_COMMAND_INVALID", `on-file command '${text}': ${why}`);
}

/** Stands in for `$` while splitting, so that no variable is expanded (not even `${HOME}`). */
const DOLLAR = "\uE000";

/** shell-quote closes an unterminated quote silently; a shell would refuse, and so do we. */
function findUnclosedQuote(text: string): string | null {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote === "'") {
      if (ch === "'") quote = null;
    } else if (ch === "\\") {
      i++;
    } else if (quote === '"') {
      if (ch === '"') quote = null;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    }
  }
  return quote;
}

/**
 * Splits a command like a POSIX shell splits words (quotes, backslashes) without running a
 * shell: no pipes, redirections, globbing or variable expansion (`$HOME` stays as written).
 * A relative program path with a `/` resolves against `baseDir` (a config file's folder).
 */
export function parseHookCommand(text: string, baseDir?: string): HookCommand {
  const unclosed = findUnclosedQuote(text);
  if (unclosed !== null) throw invalid(text, `a ${unclosed} quote is never closed`);
  const words = parseShellWords(text.replaceAll("$", DOLLAR));
  const restore = (word: string) => word.replaceAll(DOLLAR, "$");
  const argv: string[] = [];
  for (const word of words) {
    if (typeof word === "string") {
      argv.push(restore(word));
      continue;
    }
    if ("comment" in word) break;
    if ("op" in word && word.op === "glob") {
      argv.push(restore(word.pattern));
      continue;
    }
    const op = "op" in word ? word.op : "?";
    throw invalid(
      text,
      `shell operator '${op}' is not supported because no shell runs the hook; wrap it as sh -c '...' if you need one`,
    );
  }
  const [program] = argv;
  if (program === undefined) throw invalid(text, "the command is empty");
  if (baseDir !== undefined && program.includes("/") && !isAbsolute(program)) {
    argv[0] = resolve(baseDir, program);
  }
  return { text, argv };
}

const PLACEHOLDER = /\{(path|root)\}/g;

/**
 * The argv for one file: each placeholder is replaced inside its own argument, in one pass,
 * so a `{root}` inside a file's name stays as written.
 */
export function expandHookCommand(
  command: HookCommand,
  values: { path: string; root: string },
): string[] {
  return command.argv.map((arg) =>
    arg.replace(PLACEHOLDER, (_, key: "path" | "root") => values[key]),
  );
}
