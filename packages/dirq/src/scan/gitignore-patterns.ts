import { characterSource } from "./bash-glob.js";

/**
 * One `.gitignore` file (or `info/exclude`, or config `ignore`) compiled to git's rules
 * (gitignore(5) with wildmatch): the last matching pattern decides, `!` re-includes, a
 * trailing `/` matches directories only, a pattern with a `/` before its end is anchored to
 * the file's folder and one without matches a name at any depth, `**` crosses folders,
 * matching is with case (git on Linux), and a leading `.` is not special.
 *
 * Deliberately no "a file in an ignored folder is ignored" check: the walk never enters an
 * ignored folder, and a deeper `.gitignore` may re-include a folder that this file ignores.
 */
export interface GitignorePatterns {
  /** `true` ignored, `false` re-included by a negation, `null` when no pattern matches. */
  verdict(path: string, isDir: boolean): boolean | null;
  /**
   * The pattern that decides `verdict` (the last one that matches), as `git check-ignore -v`
   * names it: its line (1-based) and text as written. Slower than `verdict`: for messages.
   */
  decidingPattern(path: string, isDir: boolean): PatternMatch | null;
  readonly size: number;
}

/** A pattern of an ignore file that matched a path. */
export interface PatternMatch {
  /** The pattern's line in its file, 1-based. */
  line: number;
  /** The pattern as written (`build/`, `!keep.log`). */
  pattern: string;
  negative: boolean;
}

interface Rule {
  /** The pattern as a regex source, anchored by `ruleGroups`. */
  source: string;
  /** The pattern's text when it has no glob syntax (`node_modules`, `.env`). */
  literal: string | null;
  /** What a `*` followed by plain text (`*.log`) requires the name to end with. */
  suffix: string | null;
  negative: boolean;
  directoryOnly: boolean;
  /** Matched against the last name only (the pattern had no `/` before its end). */
  basenameOnly: boolean;
  /** Its line in the file (1-based) and its text as written, for messages. */
  line: number;
  text: string;
}

/** Trailing spaces end a pattern unless escaped with a backslash. */
function trimTrailingSpaces(line: string): string {
  let end = line.length;
  while (end > 0 && line[end - 1] === " " && line[end - 2] !== "\\") end--;
  return line.slice(0, end);
}

/** The body of a wildmatch pattern (no leading `/`, no trailing `/`) as a regex source. */
function wildmatchSource(pattern: string): string {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === "*") {
      let run = 1;
      while (pattern[i + run] === "*") run++;
      const atStart = i === 0 || pattern[i - 1] === "/";
      const atEnd = i + run === pattern.length || pattern[i + run] === "/";
      i += run - 1;
      if (run >= 2 && atStart && atEnd) {
        if (i + 1 === pattern.length) {
          source += ".*"; // `a/**`: everything inside
        } else {
          source += "(?:[^/]*/)*"; // `**/`: zero or more folders
          i++; // the slash is part of it
        }
        continue;
      }
      source += "[^/]*";
    } else {
      const part = characterSource(pattern, i, "[^/]");
      source += part.source;
      i = part.last;
    }
  }
  return source;
}

function compileRule(line: string, index: number): Rule | null {
  let text = trimTrailingSpaces(line.replace(/\r$/, ""));
  if (text === "" || text.startsWith("#")) return null;
  const written = text;
  let negative = false;
  if (text.startsWith("!")) {
    negative = true;
    text = text.slice(1);
  }
  let directoryOnly = false;
  if (text.endsWith("/") && !text.endsWith("\\/")) {
    directoryOnly = true;
    text = text.replace(/\/+$/, "");
  }
  if (text === "") return null;
  const basenameOnly = !text.includes("/");
  if (text.startsWith("/")) text = text.slice(1);
  return {
    source: wildmatchSource(text),
    literal: PLAIN.test(text) ? text : null,
    suffix:
      basenameOnly && text.startsWith("*") && PLAIN.test(text.slice(1)) ? text.slice(1) : null,
    negative,
    directoryOnly,
    basenameOnly,
    line: index + 1,
    text: written,
  };
}

/** Text with no glob syntax and no escapes: it matches only itself. */
const PLAIN = /^[^*?[\\]+$/;

/**
 * Consecutive rules that give the same verdict to the same kind of path, tested at once: the
 * literal ones by a set, the `*.ext` ones by their endings, the rest by one alternation.
 */
interface RuleGroup {
  literals: ReadonlySet<string>;
  suffixes: readonly string[];
  regex: RegExp | null;
  negative: boolean;
  directoryOnly: boolean;
  basenameOnly: boolean;
}

/**
 * The rules in groups, last first. Within a run of rules alike in all but their pattern, which
 * of them matches makes no difference, so one alternation tests them all: a `.gitignore` of
 * twenty names is one or two regex tests per path instead of twenty.
 */
function ruleGroups(rules: readonly Rule[]): RuleGroup[] {
  const groups: RuleGroup[] = [];
  let run: Rule[] = [];
  const flush = () => {
    const first = run[0];
    if (first === undefined) return;
    const literals = new Set<string>();
    const suffixes: string[] = [];
    const sources: string[] = [];
    for (const rule of run) {
      if (rule.literal !== null) literals.add(rule.literal);
      else if (rule.suffix !== null) suffixes.push(rule.suffix);
      else sources.push(`(?:${rule.source})`);
    }
    groups.push({
      literals,
      suffixes,
      regex: sources.length === 0 ? null : new RegExp(`^(?:${sources.join("|")})$`, "s"),
      negative: first.negative,
      directoryOnly: first.directoryOnly,
      basenameOnly: first.basenameOnly,
    });
    run = [];
  };
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i] as Rule;
    const first = run[0];
    if (
      first !== undefined &&
      (first.negative !== rule.negative ||
        first.directoryOnly !== rule.directoryOnly ||
        first.basenameOnly !== rule.basenameOnly)
    ) {
      flush();
    }
    run.push(rule);
  }
  flush();
  return groups;
}

function matchesGroup(group: RuleGroup, subject: string): boolean {
  if (group.literals.has(subject)) return true;
  for (const suffix of group.suffixes) {
    if (subject.endsWith(suffix)) return true;
  }
  return group.regex?.test(subject) === true;
}

/** The last rule that matches, tested one by one (see `decidingPattern`). */
function decidingRule(rules: readonly Rule[], path: string, isDir: boolean): PatternMatch | null {
  const name = path.slice(path.lastIndexOf("/") + 1);
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i] as Rule;
    if (rule.directoryOnly && !isDir) continue;
    const subject = rule.basenameOnly ? name : path;
    if (new RegExp(`^(?:${rule.source})$`, "s").test(subject)) {
      return { line: rule.line, pattern: rule.text, negative: rule.negative };
    }
  }
  return null;
}

export function compileGitignore(text: string): GitignorePatterns {
  const rules = text
    .split("\n")
    .map(compileRule)
    .filter((rule): rule is Rule => rule !== null);
  const groups = ruleGroups(rules);
  return {
    size: rules.length,
    decidingPattern: (path, isDir) => decidingRule(rules, path, isDir),
    verdict(path, isDir) {
      const name = path.slice(path.lastIndexOf("/") + 1);
      for (const group of groups) {
        if (group.directoryOnly && !isDir) continue;
        if (matchesGroup(group, group.basenameOnly ? name : path)) return !group.negative;
      }
      return null;
    },
  };
}
