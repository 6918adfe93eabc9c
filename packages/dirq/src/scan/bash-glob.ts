/**
 * Glob patterns with the meaning bash gives them under `shopt -s globstar` (no `dotglob`,
 * no `extglob`, no `nocaseglob`): brace expansion first, then per-segment matching.
 *
 * - `*` and `?` stay inside one segment; `**` as a whole segment crosses directories.
 * - `[abc]`, `[a-z]`, `[!a]`, `[^a]`, `[[:alpha:]]`.
 * - A name that starts with `.` is matched only by a segment that starts with a literal `.`
 *   (also never by `[.]` or a negated class, as in bash).
 * - `\x` is a literal `x`; every character outside `* ? [ ] { } \` is literal, so
 *   parentheses, `!`, `+` and `@` are just characters.
 * - A trailing `/` selects directories only.
 * - `{name}` (one identifier between braces, which bash leaves as literal text) is a capture:
 *   it matches what `*` matches there, and `captures` says what it matched.
 *
 * Written here rather than taken from a glob library because the libraries at hand
 * (picomatch, minimatch) follow other shells' rules for the cases above.
 */

/** One segment of a pattern: a globstar, or a regular expression for one name. */
type Segment =
  | { kind: "globstar" }
  | {
      kind: "name";
      regex: RegExp;
      literalDot: boolean;
      /** The one name it matches, when it has no glob syntax: compared, not run as a regex. */
      literal: string | null;
    };

/** A capture where it starts in a pattern: `{name}`, the name one SQL identifier. */
const CAPTURE = /^\{([A-Za-z_][A-Za-z0-9_]*)\}/;

/** One brace alternative of a pattern, compiled. */
interface CompiledAlternative {
  segments: Segment[];
  /** The pattern ended in `/`: it selects directories. */
  directoriesOnly: boolean;
}

export interface BashGlob {
  /** The pattern as written. */
  pattern: string;
  /** Whether some alternative ends in `/`. */
  selectsDirectories: boolean;
  /** Does the glob match this file path (relative, `/`-separated)? */
  matchesFile(path: string): boolean;
  /** Does a trailing-`/` alternative match this directory path? */
  matchesDirectory(path: string): boolean;
  /**
   * `matchesFile` for the files of one folder (relative, `''` for the root): the folder's
   * names are matched once, so each file costs only its own name. `null` when no file in
   * the folder can match.
   */
  fileMatcherIn(dir: string): ((name: string) => boolean) | null;
  /**
   * `fileMatcherIn(dir)` as a global regular expression that finds the matching names in a
   * folder's names joined by NUL characters, when one name pattern decides (as `*.md` does
   * after a globstar); `null` otherwise. Each match is a name with the NUL before it (none for
   * a first name at the start). One scan of the listing instead of a string per name.
   */
  bulkFileMatcherIn(dir: string): RegExp | null;
  /**
   * Whether a walk needs to enter folder `dir` (relative, not `''`): some alternative can
   * still match it (a trailing-`/` one) or something below it. `{src,test}/**` enters two of
   * the root's folders, not all of them.
   */
  entersFolder(dir: string): boolean;
  /**
   * The deepest directory below which every match lies (`''` for the root), and the most
   * segments a match can have below the root (`null` when a `**` makes it unbounded).
   */
  base: string;
  maxDepth: number | null;
  /** The names of the pattern's `{name}` captures, in the order they are written. */
  captureNames: readonly string[];
  /**
   * What each capture matched in this file path (the first alternative that matches decides;
   * a capture of another alternative is absent), or `null` when the path does not match.
   */
  fileCaptures(path: string): Record<string, string> | null;
  /** As `fileCaptures`, for a directory a trailing-`/` alternative matches. */
  directoryCaptures(path: string): Record<string, string> | null;
}

/** The `{name}` captures at `i` in a pattern: the name and its length, or `null`. */
function captureAt(text: string, i: number): { name: string; length: number } | null {
  if (text[i] !== "{") return null;
  const match = CAPTURE.exec(text.slice(i, i + 130));
  return match === null ? null : { name: match[1] as string, length: match[0].length };
}

/**
 * Calls `found` with each capture of a pattern (text without braces expanded), in order;
 * escaped braces and braces inside a bracket expression are no capture.
 */
function eachCapture(text: string, found: (name: string) => void): void {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") {
      i++;
      continue;
    }
    if (text[i] === "[") {
      const close = bracketEnd(text, i);
      if (close !== -1) i = close;
      continue;
    }
    const capture = captureAt(text, i);
    if (capture === null) continue;
    found(capture.name);
    i += capture.length - 1;
  }
}

/** The capture names of a pattern, in order, each once. */
export function captureNames(pattern: string): string[] {
  const names: string[] = [];
  eachCapture(pattern, (name) => {
    if (!names.includes(name)) names.push(name);
  });
  return names;
}

/**
 * What is wrong with a pattern, or `null`: braces that expand to more paths than a glob takes,
 * or one capture name twice in one alternative (it could capture two things).
 */
export function globProblem(pattern: string): string | null {
  const alternatives = expandBraces(pattern);
  if (alternatives.length > MAX_ALTERNATIVES) {
    return `its braces expand to more than ${MAX_ALTERNATIVES.toLocaleString("en-US")} paths (each brace multiplies the ones before it): split it into several globs (path-tables joined with UNION ALL), or select more with a wildcard and filter with WHERE`;
  }
  for (const alternative of alternatives) {
    const names: string[] = [];
    let twice: string | null = null;
    eachCapture(alternative, (name) => {
      if (names.includes(name)) twice ??= name;
      names.push(name);
    });
    if (twice !== null) {
      return `the capture {${twice}} appears twice in one path: give each capture its own name`;
    }
  }
  return null;
}

/** Whether `text` has an unescaped `*`, `?`, a bracket expression or an expandable brace. */
export function hasGlobSyntax(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === "\\") {
      i++;
      continue;
    }
    if (ch === "*" || ch === "?") return true;
    if (ch === "[" && bracketEnd(text, i) !== -1) return true;
  }
  return expandBraces(text).length > 1 || captureNames(text).length > 0;
}

/** Whether the text has a backslash escape (then it must be read as a pattern). */
export function hasEscape(text: string): boolean {
  return text.includes("\\");
}

/** The text with backslash escapes removed (`\[` → `[`). */
export function unescapeGlob(text: string): string {
  return text.replace(/\\(.)/gs, "$1");
}

/** Index of the `]` closing the bracket expression opened at `open`, or -1 when none does. */
export function bracketEnd(text: string, open: number): number {
  let i = open + 1;
  if (text[i] === "!" || text[i] === "^") i++;
  if (text[i] === "]") i++;
  while (i < text.length) {
    const ch = text[i];
    if (ch === "/") return -1;
    if (ch === "[" && text[i + 1] === ":") {
      const close = text.indexOf(":]", i + 2);
      if (close !== -1) {
        i = close + 2;
        continue;
      }
    }
    if (ch === "\\") i++;
    else if (ch === "]") return i;
    i++;
  }
  return -1;
}

/** Closing brace of the group opened at `open` and its top-level comma positions. */
function braceGroup(text: string, open: number): { close: number; commas: number[] } | null {
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\\") {
      i++;
      continue;
    }
    if (ch === "{") depth++;
    else if (ch === "}") {
      depth--;
      if (depth === 0) return { close: i, commas };
    } else if (ch === "," && depth === 1) commas.push(i);
  }
  return null;
}

const SEQUENCE = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$|^([A-Za-z])\.\.([A-Za-z])$/;

/** `{1..3}` and `{a..c}`: the words of a sequence expression, or null when it is not one. */
function sequenceWords(body: string): string[] | null {
  const match = SEQUENCE.exec(body);
  if (match === null) return null;
  const words: string[] = [];
  if (match[4] !== undefined && match[5] !== undefined) {
    const from = match[4].charCodeAt(0);
    const to = match[5].charCodeAt(0);
    const step = from <= to ? 1 : -1;
    for (let c = from; step > 0 ? c <= to : c >= to; c += step) words.push(String.fromCharCode(c));
    return words;
  }
  const from = Number(match[1]);
  const to = Number(match[2]);
  const by = Math.abs(Number(match[3] ?? 1)) || 1;
  if (Math.abs(to - from) / by > 10_000) return null;
  const step = from <= to ? by : -by;
  for (let n = from; step > 0 ? n <= to : n >= to; n += step) words.push(String(n));
  return words;
}

/**
 * Most paths a pattern's braces may expand to, against `{a,b}{c,d}...` blow-ups: a generated
 * list of thousands of names fits (a walk looks literal names up), and `globProblem` refuses
 * a pattern past it. Expansion stops one past it, so a blow-up costs no more than that.
 */
export const MAX_ALTERNATIVES = 10_000;

/**
 * Bash brace expansion: `a{b,c}d` → `abd`, `acd`; a brace without a comma stays literal. Past
 * MAX_ALTERNATIVES it returns MAX_ALTERNATIVES + 1 of them (see globProblem).
 */
export function expandBraces(text: string): string[] {
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\\") {
      i++;
      continue;
    }
    if (ch !== "{") continue;
    const group = braceGroup(text, i);
    if (group === null) return [text];
    const prefix = text.slice(0, i);
    const suffix = text.slice(group.close + 1);
    const body = text.slice(i + 1, group.close);
    let words: string[] | null;
    if (group.commas.length > 0) {
      const bounds = [i, ...group.commas, group.close];
      words = bounds.slice(1).map((end, k) => text.slice((bounds[k] as number) + 1, end));
    } else {
      words = sequenceWords(body);
    }
    if (words === null) {
      // Not an expansion: keep this brace literal and look for one further on.
      return expandBraces(text.slice(i + 1)).map((rest) => `${prefix}{${rest}`);
    }
    const out: string[] = [];
    for (const word of words) {
      for (const expanded of expandBraces(`${prefix}${word}${suffix}`)) {
        out.push(expanded);
        if (out.length > MAX_ALTERNATIVES) return out;
      }
    }
    return out;
  }
  return [text];
}

export function escapeRegex(ch: string): string {
  return ch.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

const POSIX_CLASSES: Record<string, string> = {
  alpha: "A-Za-z",
  digit: "0-9",
  alnum: "A-Za-z0-9",
  upper: "A-Z",
  lower: "a-z",
  space: " \\t\\n\\r\\f\\v",
  blank: " \\t",
  punct: "!-\\/:-@\\[-`{-~",
  xdigit: "0-9A-Fa-f",
  word: "A-Za-z0-9_",
  cntrl: "\\x01-\\x1f\\x7f", // without NUL, which no name has (see bulkFileMatcherIn)
  print: "\\x20-\\x7e",
  graph: "\\x21-\\x7e",
};

/** A bracket expression (`text[open..close]`) as a regex character class. */
export function bracketRegex(text: string, open: number, close: number): string {
  let i = open + 1;
  let negated = false;
  if (text[i] === "!" || text[i] === "^") {
    negated = true;
    i++;
  }
  let body = "";
  let first = true;
  while (i < close) {
    const ch = text[i] as string;
    if (ch === "[" && text[i + 1] === ":") {
      const end = text.indexOf(":]", i + 2);
      if (end !== -1 && end < close) {
        body += POSIX_CLASSES[text.slice(i + 2, end)] ?? "";
        i = end + 2;
        first = false;
        continue;
      }
    }
    if (ch === "\\" && i + 1 < close) {
      body += escapeRegex(text[i + 1] as string);
      i += 2;
    } else if (ch === "-" && !first && i + 1 < close) {
      body += "-";
      i++;
    } else {
      body += escapeRegex(ch);
      i++;
    }
    first = false;
  }
  if (body === "") return negated ? "[^/\\0]" : "(?!)";
  return negated ? `[^/\\0${body}]` : `[${body}]`;
}

/**
 * The regular expression for the pattern character at `i` other than `*`, whose meaning the
 * caller decides: `?` (as `anyCharacter`), a bracket expression (a `[` with no close is
 * itself), an escaped character or a literal one. `last`: the index of its last character.
 */
export function characterSource(
  pattern: string,
  i: number,
  anyCharacter: string,
): { source: string; last: number } {
  const ch = pattern[i] as string;
  if (ch === "\\" && i + 1 < pattern.length) {
    return { source: escapeRegex(pattern[i + 1] as string), last: i + 1 };
  }
  if (ch === "?") return { source: anyCharacter, last: i };
  if (ch === "[") {
    const close = bracketEnd(pattern, i);
    if (close !== -1) return { source: bracketRegex(pattern, i, close), last: close };
  }
  return { source: escapeRegex(ch), last: i };
}

/**
 * One path segment of a pattern as an anchored regular expression. It never matches a NUL
 * (no name has one), so the same source also finds whole names in a NUL-joined listing.
 */
function segmentRegex(segment: string, names: string[] = []): Segment {
  if (segment === "**") return { kind: "globstar" };
  let source = "";
  for (let i = 0; i < segment.length; i++) {
    const capture = captureAt(segment, i);
    if (capture !== null) {
      // What `*` matches, kept under the capture's name (a name used twice is refused by
      // captureProblem; here the second is only matched).
      const named = names.includes(capture.name) ? "" : `?<${capture.name}>`;
      names.push(capture.name);
      source += `(${named}[^/\\0]*)`;
      i += capture.length - 1;
    } else if (segment[i] === "*") {
      while (segment[i + 1] === "*") i++;
      source += "[^/\\0]*";
    } else {
      const part = characterSource(segment, i, "[^/\\0]");
      source += part.source;
      i = part.last;
    }
  }
  const literalDot = segment.startsWith(".") || segment.startsWith("\\.");
  const literal = hasGlobSyntax(segment) ? null : unescapeGlob(segment);
  return { kind: "name", regex: new RegExp(`^${source}$`, "s"), literalDot, literal };
}

function nameMatches(segment: Segment & { kind: "name" }, name: string): boolean {
  // A segment without glob syntax (each name of a brace of names is one) is compared.
  if (segment.literal !== null) return name === segment.literal;
  if (name.startsWith(".") && !segment.literalDot) return false;
  return segment.regex.test(name);
}

/** Splits a pattern into segments on `/` (a `/` is never escaped inside a name). */
function splitSegments(pattern: string): string[] {
  return pattern.split("/").filter((segment, i, all) => segment !== "" || i === all.length - 1);
}

function compileAlternative(pattern: string): CompiledAlternative {
  const directoriesOnly = pattern.endsWith("/");
  const trimmed = pattern.replace(/\/+$/, "");
  const parts = trimmed === "" ? [] : splitSegments(trimmed);
  const segments: Segment[] = [];
  const names: string[] = [];
  for (const part of parts) {
    const segment = segmentRegex(part, names);
    // `**/**` is the same as `**`.
    if (segment.kind === "globstar" && segments.at(-1)?.kind === "globstar") continue;
    segments.push(segment);
  }
  return { segments, directoriesOnly };
}

/**
 * Whether `names` (a path split on `/`) match `segments` from the given positions. A
 * globstar matches zero or more names, none of them starting with `.`.
 */
function matchFrom(
  segments: Segment[],
  s: number,
  names: string[],
  n: number,
  directory: boolean,
  trail?: number[],
): boolean {
  if (s === segments.length) return n === names.length;
  const segment = segments[s] as Segment;
  if (segment.kind === "globstar") {
    // A final `**` in a file pattern matches names below its folder, never the folder
    // itself (a file is no folder to look into); `a/**/` does select `a/`.
    const final = !directory && s === segments.length - 1;
    for (let k = n; k <= names.length; k++) {
      if (final && k === n) {
        if (names[k]?.startsWith(".") !== false) return false;
        continue;
      }
      if (trail !== undefined) trail.fill(-1, n, k);
      if (matchFrom(segments, s + 1, names, k, directory, trail)) return true;
      const name = names[k];
      if (name === undefined || name.startsWith(".")) return false;
    }
    return false;
  }
  const name = names[n];
  if (name === undefined || !nameMatches(segment, name)) return false;
  if (trail !== undefined) trail[n] = s;
  return matchFrom(segments, s + 1, names, n + 1, directory, trail);
}

/**
 * The captures of the first of `alternatives` that matches `names` (`null`: none does): each
 * name matched by a segment with captures gives its named groups. `tried`: the indexes of the
 * alternatives that can match at all, ascending (default: every one).
 */
function capturesIn(
  alternatives: readonly CompiledAlternative[],
  names: string[],
  directory: boolean,
  tried: readonly number[] = alternatives.map((_, i) => i),
): Record<string, string> | null {
  for (const i of tried) {
    const alt = alternatives[i] as CompiledAlternative;
    const trail = new Array<number>(names.length).fill(-1);
    if (!matchFrom(alt.segments, 0, names, 0, directory, trail)) continue;
    const found: Record<string, string> = {};
    trail.forEach((s, n) => {
      const segment = alt.segments[s];
      if (segment?.kind !== "name") return;
      const groups = segment.regex.exec(names[n] as string)?.groups;
      if (groups !== undefined) Object.assign(found, groups);
    });
    return found;
  }
  return null;
}

/**
 * The segment positions of an alternative that can come next after `names` (folders, in
 * order) are matched: as `matchFrom` walks them, a globstar taking zero or more names that do
 * not start with `.`. `from`: the positions before `names` (default: the pattern's start).
 */
function positionsAfter(
  segments: Segment[],
  names: readonly string[],
  from: readonly number[] = globstarClosure(segments, [0]),
): readonly number[] {
  // Plain loops over arrays: a walk calls this for every folder it enters, so V8 optimizes
  // it, and over Sets that optimizing takes a core's time from the walk (see stateIn).
  let positions = from;
  for (let n = 0; n < names.length && positions.length > 0; n++) {
    const name = names[n] as string;
    const next: number[] = [];
    for (let i = 0; i < positions.length; i++) {
      const s = positions[i] as number;
      const segment = segments[s];
      if (segment === undefined) continue;
      if (segment.kind === "globstar") {
        if (!name.startsWith(".")) next.push(s);
      } else if (nameMatches(segment, name)) {
        next.push(s + 1);
      }
    }
    // No match is the common outcome with many alternatives: one shared empty array for it.
    positions = next.length === 0 ? NO_POSITIONS : globstarClosure(segments, next);
  }
  return positions;
}

/** The positions of an alternative that can no longer match. */
const NO_POSITIONS: readonly number[] = [];

/** The positions with, after each globstar, the one past it (it may take no name), sorted. */
function globstarClosure(segments: Segment[], positions: readonly number[]): number[] {
  const all: number[] = [];
  for (let i = 0; i < positions.length; i++) {
    for (let s = positions[i] as number; ; s++) {
      if (!all.includes(s)) all.push(s);
      if (segments[s]?.kind !== "globstar") break;
    }
  }
  return all.sort((a, b) => a - b);
}

function samePositions(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The literal directory prefix of a pattern (no glob syntax in it), unescaped. */
function literalPrefix(pattern: string): string[] {
  const out: string[] = [];
  const parts = splitSegments(pattern.replace(/\/+$/, ""));
  for (const part of parts.slice(0, -1)) {
    if (hasGlobSyntax(part)) break;
    out.push(unescapeGlob(part));
  }
  return out;
}

function commonPrefix(lists: string[][]): string[] {
  const [first = []] = lists;
  let length = first.length;
  for (const list of lists) {
    let k = 0;
    while (k < length && k < list.length && list[k] === first[k]) k++;
    length = k;
  }
  return first.slice(0, length);
}

/** Compiles a bash glob (relative to the root, no leading `./`). */
export function compileBashGlob(pattern: string): BashGlob {
  const expanded = expandBraces(pattern);
  const alternatives = expanded.map(compileAlternative);
  const fileAlternatives = alternatives.filter((alt) => !alt.directoriesOnly);
  const folders = new FolderPositions(fileAlternatives);
  const directoryAlternatives = alternatives.filter((alt) => alt.directoriesOnly);
  // Without trailing-`/` alternatives the same positions decide both, worked out once a folder.
  const entered = directoryAlternatives.length === 0 ? folders : new FolderPositions(alternatives);
  const globstarFirst = alternatives.every((alt) => alt.segments[0]?.kind === "globstar");
  const unbounded = alternatives.some((alt) => alt.segments.some((s) => s.kind === "globstar"));
  const base = commonPrefix(expanded.map(literalPrefix)).join("/");
  return {
    pattern,
    captureNames: captureNames(pattern),
    fileCaptures(path) {
      // Only the alternatives still live in the file's folder can match it: with a brace of
      // many folder names, one or two, not every one of them.
      const slash = path.lastIndexOf("/");
      const live = folders.liveIn(slash === -1 ? "" : path.slice(0, slash));
      return capturesIn(fileAlternatives, path.split("/"), false, live);
    },
    directoryCaptures(path) {
      // As fileCaptures: only the trailing-`/` alternatives live at the folder itself (their
      // indexes are into all the alternatives, which `entered` holds when there are any).
      if (directoryAlternatives.length === 0) return null;
      const live = entered.liveIn(path).filter((i) => alternatives[i]?.directoriesOnly === true);
      return capturesIn(alternatives, path === "" ? [] : path.split("/"), true, live);
    },
    selectsDirectories: directoryAlternatives.length > 0,
    base,
    maxDepth:
      unbounded || directoryAlternatives.length > 0
        ? null
        : Math.max(0, ...alternatives.map((alt) => alt.segments.length)),
    matchesFile(path) {
      // By its folder's state, as a walk selects: a live change is checked against every
      // table's glob, and a brace of thousands of names is then one lookup, not thousands.
      const slash = path.lastIndexOf("/");
      const taken = folders.lastSegmentsIn(slash === -1 ? "" : path.slice(0, slash));
      return nameTaken(taken, path.slice(slash + 1));
    },
    matchesDirectory(path) {
      // By the folder's state, as matchesFile: a walk asks it for every folder it enters.
      return directoryAlternatives.length > 0 && entered.selectsFolder(path);
    },
    fileMatcherIn(dir) {
      const taken = folders.lastSegmentsIn(dir);
      const { segments, anyVisibleName } = taken;
      if (segments.length === 0 && !anyVisibleName) return null;
      const [only] = segments;
      if (!anyVisibleName && only !== undefined && segments.length === 1) {
        return (name) => nameMatches(only, name);
      }
      return (name) => nameTaken(taken, name);
    },
    entersFolder(dir) {
      // A folder whose name a leading `**` takes leaves it room below: no positions needed.
      if (globstarFirst && !dir.startsWith(".", dir.lastIndexOf("/") + 1)) return true;
      return entered.leavesRoomIn(dir);
    },
    bulkFileMatcherIn(dir) {
      const { segments, anyVisibleName } = folders.lastSegmentsIn(dir);
      const [only] = segments;
      if (anyVisibleName || only === undefined || segments.length !== 1) return null;
      return bulkRegexFor(only);
    },
  };
}

/**
 * A whole name in a NUL-joined listing: the start or the NUL before it, the name, then a NUL or
 * the end; not a dot name unless the pattern starts with a dot (as nameMatches says). The NUL
 * is taken into the match rather than looked behind for: a lookbehind is tried at every
 * character, which costs more. Made once per segment.
 */
function bulkRegexFor(segment: Segment & { kind: "name" }): RegExp {
  let bulk = bulkRegexes.get(segment);
  if (bulk === undefined) {
    const source = segment.regex.source.slice(1, -1);
    const dot = segment.literalDot ? "" : "(?!\\.)";
    bulk = new RegExp(`(?:^|\\0)${dot}(?:${source})(?![^\\0])`, "gs");
    bulkRegexes.set(segment, bulk);
  }
  return bulk;
}

/**
 * Where a glob stands after a folder's names: the alternatives that can still match there
 * (indexes into the alternatives, ascending) and each one's positions (positionsAfter, none
 * empty). Only the live ones are kept: below one of a thousand folder names in a brace, one
 * alternative is left, and the folder's subfolders are stepped for it alone.
 */
interface FolderState {
  readonly alternatives: readonly number[];
  readonly positions: readonly (readonly number[])[];
}

/**
 * A state's alternatives split for stepping one name: those whose one next segment is a
 * literal name, by that name (a lookup finds the ones a folder's name moves on), and the rest,
 * each tried (as indexes into the state's lists).
 */
interface SteppedBy {
  byLiteral: Map<string, number[]> | null;
  tried: readonly number[];
}

/** Alternatives a state has before a literal index pays for itself over trying each. */
const LITERAL_INDEX_FROM = 8;

/**
 * Where a glob's alternatives stand in each folder a walk enters, remembered per folder: its
 * file alternatives' (which names a folder's files may take), or all of them (which folders a
 * walk enters).
 */
class FolderPositions {
  private readonly stateByDir = new Map<string, FolderState>();
  private readonly lastSegmentsAt = new WeakMap<FolderState, LastSegments>();
  private readonly roomAt = new WeakMap<FolderState, boolean>();
  private readonly selectedAt = new WeakMap<FolderState, boolean>();
  private readonly steppedAt = new WeakMap<FolderState, SteppedBy>();

  constructor(private readonly alternatives: readonly CompiledAlternative[]) {}

  /**
   * Whether a trailing-`/` alternative matches folder `dir` itself: its names used up every
   * segment (a `**` at the end takes none or more, never a dot name, as matchFrom says).
   */
  selectsFolder(dir: string): boolean {
    return remembered(this.selectedAt, this.stateIn(dir), (state) =>
      state.alternatives.some((i, k) => {
        const alt = this.alternatives[i] as CompiledAlternative;
        return (
          alt.directoriesOnly && (state.positions[k] as number[]).includes(alt.segments.length)
        );
      }),
    );
  }

  /**
   * Whether some alternative can still match at folder `dir` or below: a trailing-`/` one
   * that has matched or may match further, a file one with a segment left for what lies
   * below (one whose segments the folder's names used up names the folder, not a file).
   */
  leavesRoomIn(dir: string): boolean {
    return remembered(this.roomAt, this.stateIn(dir), (state) => this.hasRoom(state));
  }

  private hasRoom(state: FolderState): boolean {
    for (let k = 0; k < state.alternatives.length; k++) {
      const alt = this.alternatives[state.alternatives[k] as number] as CompiledAlternative;
      for (const from of state.positions[k] as readonly number[]) {
        if (alt.directoriesOnly || from < alt.segments.length) return true;
      }
    }
    return false;
  }

  /** The alternatives (indexes, ascending) that can still match at folder `dir` or below. */
  liveIn(dir: string): readonly number[] {
    return this.stateIn(dir).alternatives;
  }

  /** The name segments that can take a file's name in folder `dir` (see fileMatcherIn). */
  lastSegmentsIn(dir: string): LastSegments {
    return remembered(this.lastSegmentsAt, this.stateIn(dir), (state) =>
      this.lastSegmentsFrom(state),
    );
  }

  /**
   * The last segments for these positions of each file alternative. A file's name is one
   * segment, so only an alternative's last segment can take it: a globstar before it takes no
   * name (positionsAfter already stepped past it), and a name segment before it leaves
   * segments that take no name, which none does (a final globstar takes one at least). A
   * final globstar takes any name not starting with `.`.
   */
  private lastSegmentsFrom(state: FolderState): LastSegments {
    const segments: (Segment & { kind: "name" })[] = [];
    let anyVisibleName = false;
    for (let k = 0; k < state.alternatives.length; k++) {
      const alt = this.alternatives[state.alternatives[k] as number] as CompiledAlternative;
      const last = alt.segments.length - 1;
      for (const from of state.positions[k] as readonly number[]) {
        const segment = alt.segments[from];
        if (from !== last || segment === undefined) continue;
        if (segment.kind === "globstar") anyVisibleName = true;
        else if (!segments.includes(segment)) segments.push(segment);
      }
    }
    const literalNames = new Set<string>();
    const patterned: (Segment & { kind: "name" })[] = [];
    for (const segment of segments) {
      if (segment.literal === null) patterned.push(segment);
      else literalNames.add(segment.literal);
    }
    return { segments, anyVisibleName, literalNames, patterned };
  }

  /**
   * The state after the folder names of `dir`, made from its parent folder's with one step,
   * and the parent's own object when the step changes nothing (below a `**`, nearly always),
   * so lastSegmentsIn works once per distinct state. A walk asks for every folder it enters;
   * going from the root each time, with Sets, makes V8 spend long optimizing these functions
   * on a background thread during a big glob, and on a machine with few cores that time
   * comes out of the listing's.
   */
  private stateIn(dir: string): FolderState {
    const known = this.stateByDir.get(dir);
    if (known !== undefined) return known;
    let state: FolderState;
    if (dir === "") {
      state = this.rootState();
    } else {
      const slash = dir.lastIndexOf("/");
      const parent = this.stateIn(slash === -1 ? "" : dir.slice(0, slash));
      const next = this.step(parent, dir.slice(slash + 1));
      state = sameState(next, parent) ? parent : next;
    }
    if (this.stateByDir.size >= FOLDERS_REMEMBERED) this.stateByDir.clear();
    this.stateByDir.set(dir, state);
    return state;
  }

  private rootState(): FolderState {
    const alternatives: number[] = [];
    const positions: (readonly number[])[] = [];
    this.alternatives.forEach((alt, i) => {
      const from = positionsAfter(alt.segments, []);
      if (from.length === 0) return;
      alternatives.push(i);
      positions.push(from);
    });
    return { alternatives, positions };
  }

  /** The state after one more folder name: the tried alternatives, and the literal ones it names. */
  private step(state: FolderState, name: string): FolderState {
    const { byLiteral, tried } = remembered(this.steppedAt, state, (known) =>
      splitForStepping(this.alternatives, known),
    );
    const named = byLiteral?.get(name);
    // Ascending, as sameState compares them in order.
    const ks = named === undefined ? tried : [...tried, ...named].sort((a, b) => a - b);
    const alternatives: number[] = [];
    const positions: (readonly number[])[] = [];
    const names = [name];
    for (let j = 0; j < ks.length; j++) {
      const k = ks[j] as number;
      const i = state.alternatives[k] as number;
      const alt = this.alternatives[i] as CompiledAlternative;
      const after = positionsAfter(alt.segments, names, state.positions[k] as readonly number[]);
      if (after.length === 0) continue;
      alternatives.push(i);
      positions.push(after);
    }
    return { alternatives, positions };
  }
}

/**
 * How a state's alternatives are stepped (see SteppedBy): with few, each is tried; with many,
 * those whose one position is a literal name segment are looked up by it.
 */
function splitForStepping(
  alternatives: readonly CompiledAlternative[],
  state: FolderState,
): SteppedBy {
  const all = state.alternatives.map((_, k) => k);
  if (all.length < LITERAL_INDEX_FROM) return { byLiteral: null, tried: all };
  const byLiteral = new Map<string, number[]>();
  const tried: number[] = [];
  for (const k of all) {
    const [only, more] = state.positions[k] as readonly number[];
    const alt = alternatives[state.alternatives[k] as number] as CompiledAlternative;
    const segment = only === undefined ? undefined : alt.segments[only];
    if (more !== undefined || segment?.kind !== "name" || segment.literal === null) {
      tried.push(k);
      continue;
    }
    const same = byLiteral.get(segment.literal);
    if (same === undefined) byLiteral.set(segment.literal, [k]);
    else same.push(k);
  }
  return { byLiteral, tried };
}

function sameState(a: FolderState, b: FolderState): boolean {
  if (a.alternatives.length !== b.alternatives.length) return false;
  for (let k = 0; k < a.alternatives.length; k++) {
    if (a.alternatives[k] !== b.alternatives[k]) return false;
    if (!samePositions(a.positions[k] as number[], b.positions[k] as number[])) return false;
  }
  return true;
}

/** What `make` gives for `state`, made once per state: folders below a `**` share their parent's. */
function remembered<S extends object, T>(made: WeakMap<S, T>, state: S, make: (state: S) => T): T {
  let found = made.get(state);
  if (found === undefined) {
    found = make(state);
    made.set(state, found);
  }
  return found;
}

/** Whether a file's name in a folder is one the folder's last segments take. */
function nameTaken(taken: LastSegments, name: string): boolean {
  if (taken.anyVisibleName && !name.startsWith(".")) return true;
  if (taken.literalNames.has(name)) return true;
  const { patterned } = taken;
  for (let i = 0; i < patterned.length; i++) {
    if (nameMatches(patterned[i] as Segment & { kind: "name" }, name)) return true;
  }
  return false;
}

interface LastSegments {
  segments: (Segment & { kind: "name" })[];
  anyVisibleName: boolean;
  /** The literal ones of `segments` by name, and the others: a file's name looked up, then tried. */
  literalNames: ReadonlySet<string>;
  patterned: (Segment & { kind: "name" })[];
}

/** Folders whose glob positions a compiled glob keeps (a walk of 10,000 folders keeps all). */
const FOLDERS_REMEMBERED = 65_536;

/** The global regular expression of a name segment for NUL-joined names, made once. */
const bulkRegexes = new WeakMap<Segment, RegExp>();
