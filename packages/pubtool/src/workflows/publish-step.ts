/** How a step runs `pubtool publish`. */
export type StepKind = "run" | "action";

// `uses: <owner>/pubtool@<ref>` or a path inside such a repository.
const ACTION_PATTERN = /^[A-Za-z0-9_.-]+\/pubtool(?:\/[^@\s]*)?@\S+$/;

/** Words that may precede a command without being the command. */
const PREFIX_WORDS = new Set([
  "if",
  "then",
  "else",
  "elif",
  "do",
  "while",
  "until",
  "!",
  "time",
  "exec",
  "command",
  "sudo",
  "env",
  "nohup",
]);

/** Launchers that run a package binary: the program name comes after their own options. */
const LAUNCHERS: readonly string[][] = [
  ["npx"],
  ["bunx"],
  ["npm", "exec"],
  ["npm", "x"],
  ["pnpm", "exec"],
  ["pnpm", "dlx"],
  ["pnpm"],
  ["yarn", "dlx"],
  ["yarn", "exec"],
  ["yarn"],
  ["bun", "x"],
];

/** Launcher options that take a value (`npx -p pkg`, `npm exec --package pkg`). */
const LAUNCHER_VALUE_OPTIONS = new Set(["-p", "--package", "-c", "--call", "-w", "--workspace"]);

/** pubtool's global options that take a value. */
const PUBTOOL_VALUE_OPTIONS = new Set(["-c", "--config"]);

/**
 * Splits one logical line of shell into simple commands (at `;`, `&&`, `||`, `|`, `&`, `(`,
 * `)`, `$(`, backticks), each a list of words with quotes removed. A `#` at the start of a word
 * ends the line (a shell comment). Good enough to recognise a command, not a shell.
 */
export function splitCommands(line: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | null = null;
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) commands.push(words);
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (char === "'" || char === '"') {
      const close = line.indexOf(char, i + 1);
      const end = close === -1 ? line.length : close;
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (char === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[i + 1];
      i++;
    } else if (/\s/.test(char)) {
      endWord();
    } else if (char === "#" && word === null) {
      break;
    } else if (";&|()`{}".includes(char) || (char === "$" && line[i + 1] === "(")) {
      if (char === "$") i++;
      endCommand();
    } else {
      word = (word ?? "") + char;
    }
  }
  endCommand();
  return commands;
}

/** True for a program word that is pubtool itself (`pubtool`, `pubtool@1`, `./node_modules/.bin/pubtool`). */
function isPubtoolProgram(word: string): boolean {
  const base = word.split("/").pop() ?? "";
  return /^pubtool(?:@\S*)?(?:\.js)?$/.test(base);
}

/** The outcome of reading one simple command. */
type CommandKind = "publish" | "dry-run" | null;

/** The root `package.json` scripts, for `npm run <script>` and friends. */
export type Scripts = Readonly<Record<string, string>>;

/** The script a package-manager command runs (`npm run release`, `yarn release`), if any. */
function scriptOf(words: readonly string[], scripts: Scripts): string | null {
  const [tool, first, second] = words;
  let name: string | undefined;
  if ((tool === "npm" || tool === "bun") && (first === "run" || first === "run-script")) {
    name = second;
  } else if (tool === "pnpm" || tool === "yarn") {
    name = first === "run" ? second : first;
  }
  return name !== undefined && Object.hasOwn(scripts, name) ? (scripts[name] ?? null) : null;
}

/** What a publishing command's own words say about what it publishes. */
export interface PublishInvocation {
  /** The `--config` / `-c` value, `null` when the default lookup applies. */
  config: string | null;
  /** The `--package` values, empty for every package of the config. */
  packages: string[];
  /** `NAME=value` assignments before the command (`PUBTOOL_PYREG_URL=... pubtool publish`). */
  assignments: Record<string, string>;
  /** `cd` targets run before it in the same script, in order (`~` for a bare `cd`). */
  cd: string[];
}

/** pubtool's arguments after the program word: the command, `--dry-run`, config, packages. */
function readPubtoolArguments(words: readonly string[]): {
  command: string | null;
  dryRun: boolean;
  config: string | null;
  packages: string[];
} {
  let command: string | null = null;
  let dryRun = false;
  let config: string | null = null;
  const packages: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const inline = /^(--config|--package)=(.*)$/.exec(word);
    if (word === "--") continue;
    if (word === "--dry-run") dryRun = true;
    else if (inline?.[1] === "--config") config = inline[2] ?? "";
    else if (inline?.[1] === "--package") packages.push(inline[2] ?? "");
    else if (PUBTOOL_VALUE_OPTIONS.has(word)) config = words[++i] ?? "";
    else if (word === "--package") packages.push(words[++i] ?? "");
    else if (/^-c./.test(word)) config = word.slice(2);
    else if (word.startsWith("-")) continue;
    else if (command === null) command = word;
  }
  return { command, dryRun, config, packages };
}

/** Reads one simple command: does it run `pubtool publish`, is it a dry run, with what? */
function readCommand(
  words: readonly string[],
  scripts: Scripts,
  depth: number,
): { kind: CommandKind; invocation: PublishInvocation | null } {
  const none = { kind: null, invocation: null };
  let i = 0;
  const assignments: Record<string, string> = {};
  while (i < words.length) {
    const word = words[i] as string;
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(word);
    if (assignment) assignments[assignment[1] as string] = assignment[2] ?? "";
    if (assignment || PREFIX_WORDS.has(word)) i++;
    else break;
  }
  // `npm run release` where the script runs pubtool publish (a few levels deep at most).
  const script = depth < 4 ? scriptOf(words.slice(i), scripts) : null;
  if (script !== null) {
    const found = readLine(script, scripts, depth + 1);
    if (found.kind !== null) {
      const invocation = found.invocation && {
        ...found.invocation,
        assignments: { ...assignments, ...found.invocation.assignments },
      };
      return { kind: found.kind, invocation };
    }
  }
  // `node ./node_modules/.bin/pubtool` or `node node_modules/pubtool/bin/pubtool.js`.
  if (words[i] === "node" && words[i + 1] !== undefined && isPubtoolProgram(words[i + 1] ?? "")) {
    i++;
  }
  const launcher = LAUNCHERS.find((parts) => parts.every((part, k) => words[i + k] === part));
  if (launcher !== undefined) {
    i += launcher.length;
    while (i < words.length) {
      const word = words[i] as string;
      if (word === "--") i++;
      else if (LAUNCHER_VALUE_OPTIONS.has(word)) i += 2;
      else if (word.startsWith("-")) i++;
      else break;
    }
  }
  if (!isPubtoolProgram(words[i] ?? "")) return none;
  const args = readPubtoolArguments(words.slice(i + 1));
  if (args.command !== "publish") return none;
  if (args.dryRun) return { kind: "dry-run", invocation: null };
  return {
    kind: "publish",
    invocation: { config: args.config, packages: args.packages, assignments, cd: [] },
  };
}

/** Reads one simple command: does it run `pubtool publish`, and is it a dry run? */
function classifyCommand(words: readonly string[], scripts: Scripts, depth: number): CommandKind {
  return readCommand(words, scripts, depth).kind;
}

/** The first publishing command of a line (with the `cd`s before it on the line), if any. */
function readLine(
  line: string,
  scripts: Scripts,
  depth: number,
  cd: string[] = [],
): { kind: CommandKind; invocation: PublishInvocation | null } {
  let found: CommandKind = null;
  for (const command of splitCommands(line)) {
    if (command[0] === "cd" || command[0] === "pushd") {
      cd.push(command[1] ?? "~");
      continue;
    }
    const result = readCommand(command, scripts, depth);
    if (result.kind === "publish") {
      const invocation = result.invocation && { ...result.invocation, cd: [...cd] };
      return { kind: "publish", invocation };
    }
    if (result.kind === "dry-run") found = "dry-run";
  }
  return { kind: found, invocation: null };
}

/** Joins shell continuation lines (`\` at the end of a line). */
function logicalLines(script: string): string[] {
  return script.replace(/\\\r?\n/g, " ").split(/\r?\n/);
}

/** What a line of shell does with `pubtool publish`. */
export function lineKind(line: string, scripts: Scripts = {}, depth = 0): CommandKind {
  let found: CommandKind = null;
  for (const command of splitCommands(line)) {
    const kind = classifyCommand(command, scripts, depth);
    if (kind === "publish") return "publish";
    if (kind === "dry-run") found = "dry-run";
  }
  return found;
}

/** True when one line of shell runs `pubtool publish` (not a dry run). */
export function lineRunsPublish(line: string, scripts: Scripts = {}): boolean {
  return lineKind(line, scripts) === "publish";
}

/** True when `uses` names the tool's own workflow action. */
export function isPubtoolAction(uses: unknown): boolean {
  return typeof uses === "string" && ACTION_PATTERN.test(uses.trim());
}

/**
 * True when an `if:` value is literally false (`false`, `"false"`, `${{ false }}`): the job or
 * step never runs.
 */
export function isLiterallyFalse(condition: unknown): boolean {
  if (condition === false || condition === 0) return true;
  if (typeof condition !== "string") return false;
  return /^\s*(?:\$\{\{\s*)?(?:false|0)(?:\s*\}\})?\s*$/.test(condition);
}

/**
 * Classifies a step: "active" when it publishes, "commented" when its `run` script has the
 * publish command only on shell-comment lines, `null` otherwise (also for dry runs).
 */
export function classifyStep(
  step: unknown,
  scripts: Scripts = {},
): { kind: StepKind; state: "active" | "commented" } | null {
  if (step === null || typeof step !== "object") return null;
  const record = step as Record<string, unknown>;
  if (isLiterallyFalse(record.if)) return null;
  if (isPubtoolAction(record.uses)) {
    const inputs = record.with as Record<string, unknown> | undefined;
    if (inputs && typeof inputs === "object" && String(inputs.command).trim() === "publish") {
      const args = typeof inputs.args === "string" ? inputs.args : "";
      if (/(?:^|\s)--dry-run\b/.test(args) || inputs["dry-run"] === true) return null;
      return { kind: "action", state: "active" };
    }
    return null;
  }
  // changesets/action runs its `publish` input as a command.
  const inputs = record.with as Record<string, unknown> | undefined;
  const run =
    typeof record.run === "string"
      ? record.run
      : typeof record.uses === "string" &&
          /^changesets\/action@/.test(record.uses.trim()) &&
          typeof inputs?.publish === "string"
        ? inputs.publish
        : null;
  if (run === null) return null;
  let commented = false;
  for (const line of logicalLines(run)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("#")) {
      if (lineRunsPublish(trimmed.replace(/^#+/, ""), scripts)) commented = true;
      continue;
    }
    if (lineRunsPublish(line, scripts)) return { kind: "run", state: "active" };
  }
  return commented ? { kind: "run", state: "commented" } : null;
}

/**
 * Finds YAML-commented publishing steps in raw workflow text: a commented line that would itself
 * run `pubtool publish` (`# - run: pubtool publish`, `#   pubtool publish` inside a commented
 * block; prose that merely mentions the command does not count), or a commented
 * `uses: <owner>/pubtool@...` followed by a commented `command: publish`. Returns 1-based lines.
 */
export function findCommentedSteps(text: string): number[] {
  const lines = text.split(/\r?\n/);
  const found: number[] = [];
  const commentBody = (line: string): string | null => {
    const match = /^\s*#+(.*)$/.exec(line);
    return match ? (match[1] ?? "") : null;
  };
  for (let i = 0; i < lines.length; i++) {
    const body = commentBody(lines[i] ?? "");
    if (body === null) continue;
    // A `quoted command` in a comment is prose that names it (a migration note), not a step.
    const command = body
      .replace(/^\s*(?:-\s+)?(?:run:\s*(?:[|>][-+]?\s*)?)?/, "")
      .replace(/`[^`]*`/g, "");
    // A continued line joins the commented lines after it.
    let joined = command;
    for (let j = i + 1; /\\\s*$/.test(joined) && j < lines.length; j++) {
      const next = commentBody(lines[j] ?? "");
      if (next === null) break;
      joined = `${joined.replace(/\\\s*$/, " ")}${next}`;
    }
    if (command.trim() !== "" && lineRunsPublish(joined)) {
      found.push(i + 1);
      continue;
    }
    const uses = /^\s*-?\s*uses:\s*(\S+)/.exec(body);
    if (uses && isPubtoolAction(uses[1])) {
      for (let j = i + 1; j < Math.min(lines.length, i + 8); j++) {
        const next = commentBody(lines[j] ?? "");
        if (next === null) break;
        if (/^\s*command:\s*["']?publish["']?\s*$/.test(next)) {
          found.push(i + 1);
          break;
        }
      }
    }
  }
  return found;
}

/**
 * What a publishing step's own words say about its target: the `--config` and `--package`
 * arguments, inline variable assignments and the `cd`s before the command (`run:` steps), or
 * the `args` input of the tool's action. `null` for a step that does not publish.
 */
export function publishInvocation(step: unknown, scripts: Scripts = {}): PublishInvocation | null {
  if (classifyStep(step, scripts)?.state !== "active") return null;
  const record = step as Record<string, unknown>;
  const inputs = (record.with ?? {}) as Record<string, unknown>;
  if (isPubtoolAction(record.uses)) {
    const raw = typeof inputs.args === "string" ? inputs.args : "";
    const words = splitCommands(
      raw.replace(
        /\$\{\{\s*(.*?)\s*\}\}/g,
        (_m, inner: string) => `$[[${inner.replace(/\s+/g, "")}]]`,
      ),
    ).flat();
    const args = readPubtoolArguments(["publish", ...words]);
    return { config: args.config, packages: args.packages, assignments: {}, cd: [] };
  }
  const run = typeof record.run === "string" ? record.run : String(inputs.publish ?? "");
  const cd: string[] = [];
  // `${{ ... }}` holds spaces and braces the shell splitter would cut; keep each one a word.
  const kept = run.replace(
    /\$\{\{\s*(.*?)\s*\}\}/g,
    (_match, inner: string) => `$[[${inner.replace(/\s+/g, "")}]]`,
  );
  for (const line of logicalLines(kept)) {
    if (line.trim().startsWith("#")) continue;
    const found = readLine(line, scripts, 0, cd);
    if (found.kind === "publish") return found.invocation;
  }
  return null;
}

/** Shows a word kept by `publishInvocation` as the workflow wrote it (`${{ matrix.package }}`). */
export function showExpression(word: string): string {
  return word.replace(/\$\[\[(.*?)\]\]/g, (_match, inner: string) => `\${{ ${inner} }}`);
}
