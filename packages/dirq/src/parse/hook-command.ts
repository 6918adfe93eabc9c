import { delimiter, isAbsolute, resolve } from "node:path";
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

/** Characters that end a word and start an operator in sh (`|`, `&&`, `;`, `>`, `(`...). */
const OPERATOR_CHARACTERS = new Set(["|", "&", ";", "<", ">", "(", ")"]);
const BLANKS = new Set([" ", "\t"]);
/** Inside double quotes a backslash escapes only these (POSIX sh, 2.2.3). */
const ESCAPABLE_IN_DOUBLE_QUOTES = new Set(["$", "`", '"', "\\", "\n"]);

/** The operator starting at `at` (`&&`, `||`, `>>`... as sh reads them), for the message. */
function operatorAt(text: string, at: number): string {
  const two = text.slice(at, at + 2);
  return ["&&", "||", ";;", ">>", "<<", ">&", "<&", "<>", ">|"].includes(two) ? two : text[at]!;
}

/** The text of the double-quoted string that starts at `start`, and where reading goes on. */
function readDoubleQuoted(text: string, start: number): { value: string; end: number } {
  let value = "";
  let i = start + 1;
  for (;;) {
    if (i >= text.length) throw invalid(text, 'a " quote is never closed');
    const inner = text[i]!;
    if (inner === '"') return { value, end: i + 1 };
    if (inner === "\\" && i + 1 < text.length && ESCAPABLE_IN_DOUBLE_QUOTES.has(text[i + 1]!)) {
      // A backslash before a line break joins the lines; before the others it escapes.
      if (text[i + 1] !== "\n") value += text[i + 1];
      i += 2;
    } else {
      value += inner;
      i++;
    }
  }
}

/**
 * Splits a command into words as POSIX `sh` does (token recognition and quote removal, XCU
 * 2.3 and 2.6.7), without running a shell: quotes and backslashes as sh reads them, and a `#`
 * starts a comment only at the start of a word (`--sep=a#b` is one word). What sh would
 * expand stays as written, because nothing expands it: `$HOME`, `*.txt`, `~`. A shell
 * operator (`|`, `;`, `&&`, `>`, `(`...) or a second line is an error: there is no shell to
 * run it. A relative program path with a `/` resolves against `baseDir` (a config file's
 * folder).
 */
export function parseHookCommand(text: string, baseDir?: string): HookCommand {
  const argv: string[] = [];
  let word = "";
  // A word has started, even if it is empty so far (`''` is one empty argument).
  let inWord = false;
  const endWord = () => {
    if (inWord) argv.push(word);
    word = "";
    inWord = false;
  };
  let wordsBeforeLineBreak: number | undefined;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "'") {
      const close = text.indexOf("'", i + 1);
      if (close === -1) throw invalid(text, "a ' quote is never closed");
      word += text.slice(i + 1, close);
      inWord = true;
      i = close + 1;
    } else if (ch === '"') {
      const quoted = readDoubleQuoted(text, i);
      word += quoted.value;
      inWord = true;
      i = quoted.end;
    } else if (ch === "\\") {
      if (i + 1 >= text.length) {
        // dash keeps a backslash that ends the input as it is; so do we.
        word += ch;
        inWord = true;
        i++;
      } else {
        if (text[i + 1] !== "\n") {
          word += text[i + 1];
          inWord = true;
        }
        i += 2;
      }
    } else if (BLANKS.has(ch)) {
      endWord();
      i++;
    } else if (ch === "#" && !inWord) {
      const lineEnd = text.indexOf("\n", i);
      i = lineEnd === -1 ? text.length : lineEnd;
    } else if (ch === "\n") {
      endWord();
      // Blank and comment lines may follow the command; a second command may not.
      if (argv.length > 0) wordsBeforeLineBreak ??= argv.length;
      i++;
    } else if (OPERATOR_CHARACTERS.has(ch)) {
      throw invalid(
        text,
        `shell operator '${operatorAt(text, i)}' is not supported because no shell runs the hook; ` +
          "quote it to pass it as text, or wrap the command as sh -c '...' if you need a shell",
      );
    } else {
      word += ch;
      inWord = true;
      i++;
    }
  }
  endWord();
  if (wordsBeforeLineBreak !== undefined && argv.length > wordsBeforeLineBreak) {
    throw invalid(
      text,
      "a line break would start a second command, and no shell runs the hook; " +
        "give one command, or wrap several as sh -c '...'",
    );
  }
  const [program] = argv;
  if (program === undefined) throw invalid(text, "the command is empty");
  if (baseDir !== undefined && program.includes("/") && !isAbsolute(program)) {
    argv[0] = resolve(baseDir, program);
  }
  if (baseDir !== undefined) argv[0] = pluginPython(argv[0] as string, baseDir, process.env);
  return { text, argv };
}

/**
 * The Python launcher runs dirq from its own environment (a pipx or uv tool venv, say), where
 * a plugin is importable by the launcher's interpreter and often by no `python3` on PATH. It
 * names that interpreter in `DIRQ_PLUGIN_PYTHON` and the folders of the Python plugins'
 * fragments in `DIRQ_PLUGIN_PYTHON_DIRS` (path-list separated): a `python3` or `python`
 * command in those fragments runs that interpreter. Other configs' commands are left alone.
 */
function pluginPython(program: string, baseDir: string, env: NodeJS.ProcessEnv): string {
  const python = env.DIRQ_PLUGIN_PYTHON;
  if (!python || (program !== "python3" && program !== "python")) return program;
  const folders = (env.DIRQ_PLUGIN_PYTHON_DIRS ?? "").split(delimiter).filter(Boolean);
  return folders.some((folder) => resolve(folder) === resolve(baseDir)) ? python : program;
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
