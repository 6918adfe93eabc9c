import { DirqError } from "../errors.js";
import type { SqlToken } from "./sql-tokens.js";
import { analysisOf, type StatementAnalysis } from "./statement-analysis.js";

/** A value the SDK binds to a statement's parameter. */
export type ParameterValue = null | number | bigint | string | Uint8Array;

/**
 * Values for a statement's parameters: an array for `?` (and `?NNN`, whose value is at
 * position NNN - 1), or an object for `:name`, `@name` and `$name`, keyed by the name without
 * its prefix (as better-sqlite3 takes them).
 */
export type QueryParameters =
  readonly ParameterValue[] | { readonly [name: string]: ParameterValue };

/**
 * The arguments for better-sqlite3's `iterate(...)`: values of anonymous `?` in order, then
 * one object for the named (and numbered) ones. Plain data: it crosses to a query process.
 */
export type BoundArguments = unknown[];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function parameterError(message: string): DirqError {
  return new DirqError("QUERY_PARAMETERS", message);
}

/** The parameters a statement has, in SQLite's numbering. */
interface StatementParameters {
  /** Bind positions of the anonymous `?`s, in order. */
  anonymous: number[];
  /** `?NNN`: NNN → as written. */
  numbered: Map<number, string>;
  /** `:name`, `@name`, `$name`: the name without its prefix → as first written. */
  named: Map<string, string>;
  /** The highest bind position: how many values a positional array must hold. */
  count: number;
}

function parametersOf(tokens: readonly SqlToken[]): StatementParameters {
  const found: StatementParameters = {
    anonymous: [],
    numbered: new Map(),
    named: new Map(),
    count: 0,
  };
  // SQLite numbers `?` one past the highest so far, `?NNN` as NNN, and a name the first time
  // it is seen (`:a` and `@a` are two parameters there, one here: bound by the same key).
  const seenNames = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== "variable") continue;
    const text = token.text;
    if (text === "?") {
      found.count++;
      found.anonymous.push(found.count);
    } else if (text.startsWith("?")) {
      const position = Number(text.slice(1));
      found.numbered.set(position, text);
      found.count = Math.max(found.count, position);
    } else {
      if (!seenNames.has(text)) {
        seenNames.add(text);
        found.count++;
      }
      const name = text.slice(1);
      if (!found.named.has(name)) found.named.set(name, text);
    }
  }
  return found;
}

function describeValue(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return `an object (${value.constructor?.name ?? "Object"})`;
  return `a ${typeof value}`;
}

/**
 * A value as better-sqlite3 binds it. A whole number within ±2^53 is bound as an INTEGER, as
 * the same number written into the SQL would be (better-sqlite3 alone binds every number as
 * a REAL, so `? / 2` with 5 would be 2.5 where `5 / 2` is 2).
 */
function bindable(value: unknown, where: string): unknown {
  if (value === null || typeof value === "string") return value;
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === "bigint") {
    if (value < INT64_MIN || value > INT64_MAX) {
      throw parameterError(
        `${where}: ${value} is outside SQLite's 64-bit integers; pass it as a string or a number`,
      );
    }
    return value;
  }
  if (value instanceof Uint8Array) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  throw parameterError(
    `${where}: ${describeValue(value)} cannot be bound; give null, a number, a bigint, a string or a Uint8Array`,
  );
}

function list(names: Iterable<string>): string {
  return [...names].join(", ");
}

/**
 * The arguments that bind `given` to a statement's parameters, checked: a positional array of
 * exactly as many values as the statement has positions, an object with a value for every
 * name and no other key. Throws a `QUERY_PARAMETERS` DirqError saying what is wrong.
 * `undefined` binds nothing (an error when the statement has parameters).
 */
export function bindArguments(
  statement: string | StatementAnalysis,
  given: QueryParameters | undefined,
): BoundArguments {
  const parameters = parametersOf(analysisOf(statement).tokens);
  const { anonymous, numbered, named, count } = parameters;
  const positional = anonymous.length > 0 || numbered.size > 0;
  if (positional && named.size > 0) {
    throw parameterError(
      `the statement mixes positional (?) and named (${list(named.values())}) parameters: use one kind, so that one array or one object binds them`,
    );
  }
  if (given === undefined || given === null) {
    if (count === 0) return [];
    const kind =
      named.size > 0
        ? `named parameters (${list(named.values())})`
        : `${count} positional parameter${count === 1 ? "" : "s"}`;
    throw parameterError(
      `the statement has ${kind} and no values were given: pass them as query(sql, ${named.size > 0 ? "{ name: value }" : "[values]"})`,
    );
  }
  if (Array.isArray(given)) {
    const values = given as readonly unknown[];
    if (named.size > 0) {
      throw parameterError(
        `the statement has named parameters (${list(named.values())}): pass an object of values, not an array`,
      );
    }
    if (values.length !== count) {
      throw parameterError(
        `the statement has ${count} positional parameter${count === 1 ? "" : "s"} and ${values.length} value${values.length === 1 ? " was" : "s were"} given`,
      );
    }
    const args: unknown[] = anonymous.map((position) =>
      bindable(values[position - 1], `parameter ${position} (?)`),
    );
    if (numbered.size > 0) {
      const byNumber: Record<string, unknown> = {};
      for (const [position, text] of numbered) {
        byNumber[String(position)] = bindable(values[position - 1], `parameter ${text}`);
      }
      args.push(byNumber);
    }
    return args;
  }
  if (typeof given !== "object" || given instanceof Uint8Array) {
    throw parameterError(
      `parameters must be an array (for ?) or an object (for :name, @name, $name), not ${describeValue(given)}`,
    );
  }
  const values = given as Readonly<Record<string, unknown>>;
  const keys = Object.keys(values);
  if (positional) {
    if (keys.length === 0 && count === 0) return [];
    throw parameterError(
      `the statement has ${count} positional parameter${count === 1 ? "" : "s"} (?): pass an array of values, not an object`,
    );
  }
  for (const key of keys) {
    if (!named.has(key)) {
      const known = named.size === 0 ? "it has none" : `it has ${list(named.values())}`;
      throw parameterError(
        `no parameter named ${JSON.stringify(key)} in the statement (${known}); keys are names without their :, @ or $`,
      );
    }
  }
  const byName: Record<string, unknown> = {};
  for (const [name, text] of named) {
    if (!Object.hasOwn(values, name) || values[name] === undefined) {
      throw parameterError(`no value for parameter ${text}: give it as { ${name}: value }`);
    }
    byName[name] = bindable(values[name], `parameter ${text}`);
  }
  return named.size === 0 ? [] : [byName];
}

/**
 * Arguments that bind NULL to every parameter: for compiling the statement's EXPLAIN, which
 * better-sqlite3 will not run with parameters left unbound.
 */
export function nullArguments(statement: string | StatementAnalysis): BoundArguments {
  const { anonymous, numbered, named } = parametersOf(analysisOf(statement).tokens);
  const args: unknown[] = anonymous.map(() => null);
  const byKey: Record<string, null> = {};
  for (const position of numbered.keys()) byKey[String(position)] = null;
  for (const name of named.keys()) byKey[name] = null;
  if (numbered.size > 0 || named.size > 0) args.push(byKey);
  return args;
}

/** A statement's bound arguments as JSON text (bigint and blob values tagged), for a frame. */
export function encodeArguments(args: BoundArguments): string {
  return JSON.stringify(args, (_key, value: unknown) => {
    if (typeof value === "bigint") return { $bigint: value.toString() };
    if (Buffer.isBuffer(value)) return { $blob: value.toString("hex") };
    // JSON.stringify hands a Buffer to toJSON first: that form is a blob too.
    if (
      value !== null &&
      typeof value === "object" &&
      (value as { type?: unknown }).type === "Buffer" &&
      Array.isArray((value as { data?: unknown }).data)
    ) {
      return { $blob: Buffer.from((value as { data: number[] }).data).toString("hex") };
    }
    return value;
  });
}

/** `encodeArguments` read back. */
export function decodeArguments(text: string): BoundArguments {
  return JSON.parse(text, (_key, value: unknown) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const tagged = value as { $bigint?: string; $blob?: string };
      if (typeof tagged.$bigint === "string") return BigInt(tagged.$bigint);
      if (typeof tagged.$blob === "string") return Buffer.from(tagged.$blob, "hex");
    }
    return value;
  }) as BoundArguments;
}
