import type * as Yaml from "yaml";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { refuseDeepNesting } from "./nesting.js";
import { storedPlainValue } from "./plain-values.js";
import { BATCH_ITEMS, type StreamToken, yamlStream } from "./yaml-batches.js";
import { PAIRS_TAGS, pythonTags } from "./yaml-tags.js";

const yaml = lazyModule<typeof Yaml>("yaml");

/**
 * YAML read as Python's `yaml.safe_load` reads it (YAML 1.1: `yes`/`no` are booleans, `<<`
 * merges, `2024-01-05` is a date), by the `yaml` package. Dates and times stay ISO-8601 text as
 * written (`2001-12-14T21:59:43.10-05:00`), never moved to another time zone. A file of several
 * documents (`---` between them) gives the rows of each in turn; an empty document none.
 * Each document is read on its own, as YAML 1.2 and PyYAML read it: no directive, tag handle,
 * anchor or schema survives into the next document, nor into the next file.
 */

const OPTIONS = {
  merge: true,
  // As PyYAML: a key repeated in one mapping keeps its last value.
  uniqueKeys: false,
  intAsBigInt: true,
  // Collection keys are refused before `toJS` (see `collectionKey`), which would stringify
  // them with a warning on stderr.
  logLevel: "error",
} as const;

/**
 * A new schema for each file: YAML 1.1's tags as PyYAML reads them, whatever `%YAML` line a
 * document has (PyYAML reads `%YAML 1.2` documents as YAML 1.1 too). Nothing in it is shared
 * with another file.
 */
function pythonSchema(): Yaml.Schema {
  return new (yaml().Schema)({
    ...OPTIONS,
    schema: "yaml-1.1",
    resolveKnownTags: false,
    customTags: pythonTags,
  });
}

/**
 * Calls `see` on each node of a document (pairs, keys and values), a node before the nodes in
 * it, as the package's `visit` does, without the frozen path `visit` builds for every node: on a
 * large document that path made most of the walk's time. `see` returns true to stop.
 */
function eachNode(document: Yaml.Document.Parsed, see: (node: unknown) => boolean): void {
  const { isCollection, isPair } = yaml();
  const pending: unknown[] = [document.contents];
  while (pending.length > 0) {
    const node = pending.pop();
    if (see(node)) return;
    if (isPair(node)) pending.push(node.value, node.key);
    else if (isCollection(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) pending.push(node.items[i]);
    }
  }
}

/**
 * The first mapping or list used as a mapping key (`? [a, b] : c`, or a template's
 * `title: {{ x }}`, a mapping whose key is a mapping), or `null`. PyYAML refuses such a key
 * ("found unhashable key"); the `yaml` package would make it text, a key no file wrote.
 */
function collectionKey(document: Yaml.Document.Parsed): Yaml.Node | null {
  const { isAlias, isCollection, isPair } = yaml();
  let found: Yaml.Node | null = null;
  eachNode(document, (node) => {
    if (!isPair(node)) return false;
    let key = node.key;
    if (isAlias(key)) key = key.resolve(document) ?? null;
    if (isCollection(key)) found = key;
    return found !== null;
  });
  return found;
}

/** `line L, column C: ` of an offset in the text (whose first line is `firstLine`). */
type Where = (offset: number) => string;

/** A document's tokens with its directives and the comments around it, or a batch of a list. */
type Piece =
  { kind: "group"; tokens: Yaml.CST.Token[] } | { kind: "batch"; document: Yaml.CST.Document };

/**
 * The stream's tokens, one group per document: its directives, the document, its `...` and
 * the comments around them. Each group is composed on its own, so that nothing of one
 * document (a `%TAG` handle, a `%YAML` version) reaches the next. A batch of the next
 * document's list ends the group before it.
 */
function* documentGroups(stream: Iterable<StreamToken>): Generator<Piece> {
  let group: Yaml.CST.Token[] = [];
  let hasDocument = false;
  for (const piece of stream) {
    const token = piece.kind === "token" ? piece.token : null;
    const starts = token === null || token.type === "directive" || token.type === "document";
    if (hasDocument && starts) {
      yield { kind: "group", tokens: group };
      group = [];
      hasDocument = false;
    }
    if (token === null) {
      yield piece as Piece;
      continue;
    }
    group.push(token);
    if (token.type === "document") hasDocument = true;
  }
  if (group.length > 0) yield { kind: "group", tokens: group };
}

/**
 * What PyYAML refuses in a document's directives and the `yaml` package reads without a word,
 * with the offset it is at, or null.
 */
function directiveProblem(group: Yaml.CST.Token[]): { offset: number; reason: string } | null {
  let version = false;
  const handles = new Set<string>();
  let last: Yaml.CST.Token | null = null;
  for (const token of group) {
    if (token.type === "error") return { offset: token.offset, reason: token.message };
    if (token.type === "document") return null;
    if (token.type !== "directive") continue;
    last = token;
    const [name, value = ""] = token.source
      .replace(/[ \t]+#.*$/, "")
      .trim()
      .split(/[ \t]+/);
    if (name === "%YAML" && version) {
      return { offset: token.offset, reason: "a second %YAML directive for one document" };
    }
    if (name === "%YAML" && !/^1\.\d+$/.test(value)) {
      return { offset: token.offset, reason: `%YAML ${value}: only YAML 1.x documents are read` };
    }
    if (name === "%TAG" && handles.has(value)) {
      return { offset: token.offset, reason: `a second %TAG directive for the handle ${value}` };
    }
    if (name === "%YAML") version = true;
    if (name === "%TAG") handles.add(value);
  }
  if (last === null) return null;
  return {
    offset: last.offset,
    reason:
      "a directive with no document after it (a directive belongs to the `---` document that follows it)",
  };
}

/** Warnings of the `yaml` package that PyYAML refuses: a tag it cannot construct. */
const REFUSED_WARNINGS = new Set(["TAG_RESOLVE_FAILED", "BAD_COLLECTION_TYPE"]);

/** The first problem of a document, with its line and column. */
function documentProblem(document: Yaml.Document.Parsed, where: Where): string | null {
  const error =
    document.errors[0] ?? document.warnings.find((warning) => REFUSED_WARNINGS.has(warning.code));
  if (error === undefined) return null;
  let message = error.message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? "";
  const unresolved = /^Unresolved tag: (.*)$/.exec(message)?.[1];
  const handle = /^Could not resolve tag: (!.*!)/.exec(message)?.[1];
  if (unresolved !== undefined) {
    const tag = unresolved.replace(/^tag:yaml\.org,2002:/, "!!");
    message = `the tag ${tag} is not one Python's yaml.safe_load reads (!!str, !!int, !!float, !!bool, !!null, !!timestamp, !!binary, !!map, !!seq, !!set, !!omap, !!pairs): remove it to read the value as written`;
  } else if (handle !== undefined) {
    message = `the tag handle ${handle} is not declared for this document (a %TAG directive holds only for the document right after it)`;
  }
  return `${where(error.pos[0])}${message} (not valid YAML)`;
}

/**
 * `!!omap` and `!!pairs` (ordered pairs) inside a value as lists of `[key, value]` lists, as
 * PyYAML gives them, and `!!set` as the list of its members, in the order written. A document
 * that is one of them holds no rows: the file's error.
 */
function pairsAsLists(document: Yaml.Document.Parsed, where: Where, tagged: boolean): void {
  const { isCollection, isPair, visit, YAMLSeq } = yaml();
  const top = document.contents;
  if (isCollection(top) && top.tag !== undefined && PAIRS_TAGS.has(top.tag)) {
    const tag = top.tag.replace("tag:yaml.org,2002:", "!!");
    throw new RowsError(
      `${where(top.range[0])}the document is a ${tag}, not rows (a mapping, or a list of mappings): drop the ${tag} tag to read its keys as one row`,
    );
  }
  // Without a `!` in the text there is no tag to look for (a second walk of a large document).
  if (!tagged) return;
  visit(document, {
    Collection(_, node) {
      if (node.tag === undefined || !PAIRS_TAGS.has(node.tag)) return undefined;
      const list = new YAMLSeq(document.schema);
      for (const item of node.items as unknown[]) {
        if (!isPair(item) || node.tag.endsWith(":set"))
          list.items.push(isPair(item) ? item.key : item);
        else
          list.items.push(
            Object.assign(new YAMLSeq(document.schema), { items: [item.key, item.value] }),
          );
      }
      list.anchor = node.anchor;
      return list;
    },
  });
}

/**
 * How many values a document may hold once its aliases are expanded. A "billion laughs" holds
 * billions in a few lines; an ordinary file with a thousand `<<: *defaults` merges, tens of
 * thousands.
 */
export const MAX_EXPANDED_VALUES = 1_000_000;

/** Each alias of a document with the node it names (the last anchor of that name before it). */
function aliasTargets(document: Yaml.Document.Parsed): Map<Yaml.Alias, unknown> {
  const { isAlias } = yaml();
  const anchors = new Map<string, unknown>();
  const targets = new Map<Yaml.Alias, unknown>();
  eachNode(document, (node) => {
    if (isAlias(node)) targets.set(node, anchors.get(node.source));
    else if (node !== null && typeof node === "object" && "anchor" in node && node.anchor) {
      anchors.set(String(node.anchor), node);
    }
    return false;
  });
  return targets;
}

/** Refuses a document whose aliases expand it past `MAX_EXPANDED_VALUES` values. */
function refuseAliasBomb(document: Yaml.Document.Parsed): void {
  const { isAlias, isCollection, isPair } = yaml();
  const targets = aliasTargets(document);
  if (targets.size === 0) return;
  const sizes = new Map<unknown, number>();
  const sizeOf = (node: unknown): number => {
    const known = sizes.get(node);
    if (known !== undefined) return known;
    sizes.set(node, 1); // a collection that holds itself counts once
    let size = 1;
    if (isAlias(node)) size = sizeOf(targets.get(node));
    else if (isPair(node)) size = sizeOf(node.key) + sizeOf(node.value);
    else if (isCollection(node)) {
      for (const item of node.items) if ((size += sizeOf(item)) > MAX_EXPANDED_VALUES) break;
    }
    sizes.set(node, Math.min(size, MAX_EXPANDED_VALUES + 1));
    return Math.min(size, MAX_EXPANDED_VALUES + 1);
  };
  if (sizeOf(document.contents) > MAX_EXPANDED_VALUES) {
    throw new RowsError(
      `its aliases expand it to more than ${MAX_EXPANDED_VALUES.toLocaleString("en-US")} values (dirq's limit, against a "billion laughs")`,
    );
  }
}

function documentValue(document: Yaml.Document.Parsed, where: Where, tagged: boolean): unknown {
  const problem = documentProblem(document, where);
  if (problem !== null) throw new RowsError(problem);
  const key: Yaml.Node | null = collectionKey(document);
  if (key !== null) {
    const what = yaml().isMap(key) ? "a mapping" : "a list";
    throw new RowsError(
      `${where(key.range?.[0] ?? 0)}${what} used as a key (only text, numbers, booleans, dates and null can be keys, as in Python's yaml; a template's {{ }}? quote the value)`,
    );
  }
  pairsAsLists(document, where, tagged);
  refuseAliasBomb(document);
  try {
    // The guard above measures what aliases expand to; the package's own counts alias uses.
    return document.toJS({ maxAliasCount: -1 });
  } catch (caught) {
    throw new RowsError(`not valid YAML: ${(caught as Error).message}`);
  }
}

/**
 * Thrown when a batched list turns out to hold an alias (its anchor may be in another batch),
 * a batch has a problem that is not a syntax error, or the list's last part is no list: the
 * file is read again without batches.
 */
class NotBatchable extends Error {}

function hasAlias(document: Yaml.Document.Parsed): boolean {
  const { isAlias } = yaml();
  let found = false;
  eachNode(document, (node) => (found = isAlias(node)));
  return found;
}

/**
 * A batch's values. A syntax error is the document's first, as in a whole read; any other
 * problem (a mapping used as a key, a merge of no mapping) comes after every syntax error of
 * the document in a whole read, so the file is read whole again to name the same one.
 */
function batchValue(document: Yaml.Document.Parsed, where: Where, tagged: boolean): unknown[] {
  const problem = documentProblem(document, where);
  if (problem !== null) throw new RowsError(problem);
  try {
    return documentValue(document, where, tagged) as unknown[];
  } catch (caught) {
    if (caught instanceof RowsError) throw new NotBatchable();
    throw caught;
  }
}

/**
 * A part of a YAML text's documents, in order: a whole document's value, or some items of a
 * document's top-level list read in batches (`first`: the index of the first of them in the
 * list; `end`: the list's last items).
 */
type DocumentPart =
  | { kind: "document"; value: unknown }
  | { kind: "items"; items: unknown[]; first: number; end: boolean };

/**
 * Reads the documents of `text`, a long top-level list `batchItems` items at a time, and hands
 * each part to `onPart` as soon as it is read: a list's batches are never all held at once.
 */
function readDocuments(
  text: string,
  firstLine: number,
  batchItems: number,
  onPart: (part: DocumentPart) => void,
): void {
  const lineCounter = new (yaml().LineCounter)();
  const where: Where = (offset) => {
    const { line, col } = lineCounter.linePos(offset);
    return `line ${line + firstLine - 1}, column ${col}: `;
  };
  const tagged = text.includes("!");
  // One schema per file: the `yaml` package adds to a schema's tags only for known tags of
  // YAML 1.2's core schema, which this one does not resolve.
  const schema = pythonSchema();
  const compose = (tokens: Yaml.CST.Token[]): Yaml.Document.Parsed[] => [
    ...new (yaml().Composer)({ ...OPTIONS, schema }).compose(tokens),
  ];
  /** How many items of the document being read its batches held (null: it has none). */
  let batched: number | null = null;
  const stream = yamlStream(text, lineCounter.addNewLine, batchItems);
  for (const piece of documentGroups(stream)) {
    if (piece.kind === "batch") {
      for (const document of compose([piece.document])) {
        if (hasAlias(document)) throw new NotBatchable();
        const items = batchValue(document, where, tagged);
        onPart({ kind: "items", items, first: batched ?? 0, end: false });
        batched = (batched ?? 0) + items.length;
      }
      continue;
    }
    const problem = directiveProblem(piece.tokens);
    if (problem !== null)
      throw new RowsError(`${where(problem.offset)}${problem.reason} (not valid YAML)`);
    for (const document of compose(piece.tokens)) {
      if (batched !== null && hasAlias(document)) throw new NotBatchable();
      const value = documentValue(document, where, tagged);
      if (batched === null) onPart({ kind: "document", value });
      else if (!Array.isArray(value)) throw new NotBatchable();
      else onPart({ kind: "items", items: value, first: batched, end: true });
      batched = null;
    }
  }
}

/**
 * Reads the documents of `text` as `readDocuments` does, batches first. A list whose items
 * hold aliases is read again whole (an anchor of one batch may be named in another), with
 * `onPart` told by `restart` first: the parts it was handed are the first parts of the whole
 * read's (an alias names only an anchor before it, so the items before it read the same).
 */
function readYamlParts(
  text: string,
  firstLine: number,
  batchItems: number,
  onPart: (part: DocumentPart) => void,
  restart: () => void,
): void {
  refuseDeepNesting(text, firstLine, true);
  try {
    readDocuments(text, firstLine, batchItems, onPart);
  } catch (caught) {
    if (!(caught instanceof NotBatchable)) throw caught;
    restart();
    readDocuments(text, firstLine, Infinity, onPart);
  }
}

/** The parsed documents of a YAML text, or a `RowsError` naming the line. */
export function yamlDocuments(text: string, firstLine = 1, batchItems = BATCH_ITEMS): unknown[] {
  let values: unknown[] = [];
  let list: unknown[] = [];
  const onPart = (part: DocumentPart) => {
    if (part.kind === "document") {
      values.push(part.value);
      return;
    }
    for (const item of part.items) list.push(item);
    if (part.end) values.push(list);
    if (part.end) list = [];
  };
  const restart = () => {
    values = [];
    list = [];
  };
  readYamlParts(text, firstLine, batchItems, onPart, restart);
  return values;
}

/**
 * A YAML file's rows: each document's, in order (a document that is empty has none), handed to
 * `onRows` as they are read: a long top-level list's a batch at a time. With `each`, every
 * document is read first, its rows after. A file with an error hands over rows before it (the
 * caller's to discard) but names the error a whole read names: the first syntax error of the
 * file comes before a row's problem (an item that is no mapping) earlier in the text, so after
 * such a problem the rest is still read, its rows no longer handed over.
 */
export function yamlRows(
  text: string,
  each: string | null,
  onRows: (rows: HookRow[]) => void,
  batchItems = BATCH_ITEMS,
): void {
  if (each !== null) {
    const rows: HookRow[] = [];
    for (const document of yamlDocuments(text, 1, batchItems)) {
      if (document !== null && document !== undefined)
        documentRows(document, each, storedPlainValue, rows);
    }
    onRows(rows);
    return;
  }
  /** Rows handed over; after a restart, how many of the whole read's to skip. */
  let handed = 0;
  let skip = 0;
  let rowProblem: RowsError | null = null;
  const onPart = (part: DocumentPart) => {
    const value = part.kind === "document" ? part.value : part.items;
    if (rowProblem !== null || value === null || value === undefined) return;
    let rows: HookRow[] = [];
    try {
      documentRows(value, null, storedPlainValue, rows, part.kind === "items" ? part.first : 0);
    } catch (caught) {
      if (!(caught instanceof RowsError)) throw caught;
      rowProblem = caught;
    }
    if (skip > 0) {
      const skipped = Math.min(skip, rows.length);
      rows = rows.slice(skipped);
      skip -= skipped;
    }
    handed += rows.length;
    if (rows.length > 0) onRows(rows);
  };
  const restart = () => {
    skip = handed;
    handed = 0;
    rowProblem = null;
  };
  readYamlParts(text, 1, batchItems, onPart, restart);
  if (rowProblem !== null) throw rowProblem;
  if (skip > 0) throw new Error("the whole YAML read gave fewer rows than its batches");
}
