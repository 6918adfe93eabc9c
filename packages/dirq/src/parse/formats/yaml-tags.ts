import type * as Yaml from "yaml";

/**
 * The YAML 1.1 tags as Python's `yaml.safe_load` (PyYAML's SafeLoader) reads them, where the
 * `yaml` package's YAML 1.1 schema reads more or less: plain scalars are typed by PyYAML's
 * resolvers (`y` and `n` stay text, as do `09`, `1e5` and `2024-1-5`), and an explicit tag
 * (`!!float 1`, `!!bool YES`, `!!binary R0lG`) is constructed as PyYAML constructs it. A value
 * an explicit tag cannot take (`!!int x`, `!!timestamp 2024-02-30`) is the file's error, as
 * in PyYAML. Timestamps stay ISO-8601 text as written, never moved to another time zone; a
 * `!!binary` value is its bytes (a BLOB).
 */

const tagName = (name: string): string => `tag:yaml.org,2002:${name}`;
const TIMESTAMP_TAG = tagName("timestamp");
const BOOL_TAG = tagName("bool");
const INT_TAG = tagName("int");
const FLOAT_TAG = tagName("float");
/** Collections whose shape is not rows: a set, ordered pairs. */
export const PAIRS_TAGS = new Set([tagName("set"), tagName("omap"), tagName("pairs")]);

/** PyYAML's implicit timestamp: a date alone needs two-digit month and day. */
const PLAIN_TIMESTAMP =
  /^(?:\d{4}-\d\d-\d\d|\d{4}-\d\d?-\d\d?(?:[Tt]|[ \t]+)\d\d?:\d\d:\d\d(?:\.\d*)?(?:[ \t]*(?:Z|[-+]\d\d?(?::\d\d)?))?)$/;
/** PyYAML's `timestamp_regexp`, which an explicit `!!timestamp` must match. */
const TIMESTAMP =
  /^(\d{4})-(\d\d?)-(\d\d?)(?:(?:[Tt]|[ \t]+)(\d\d?):(\d\d):(\d\d)(?:\.(\d*))?(?:[ \t]*(Z|([-+])(\d\d?)(?::(\d\d))?))?)?$/;

function pad(text: string): string {
  return text.padStart(2, "0");
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Why the parts of a timestamp are no date (as Python's `datetime` refuses them), or null. */
function outOfRange(parts: (string | undefined)[]): string | null {
  const [year, month, day, hour, minute, second, zoneHour] = parts.map(Number) as number[];
  if (!(month! >= 1 && month! <= 12)) return "month must be in 1..12";
  if (!(day! >= 1 && day! <= daysIn(year!, month!))) return "day is out of range for month";
  if (hour! > 23) return "hour must be in 0..23";
  if (minute! > 59) return "minute must be in 0..59";
  if (second! > 59) return "second must be in 0..59";
  if (zoneHour! > 23) return "the time zone offset must be under 24 hours";
  return null;
}

/**
 * `2001-12-14 21:59:43.10 -5` as `2001-12-14T21:59:43.10-05:00`, or `null` when it is not a
 * timestamp. Throws (the file's error, as in PyYAML) for a date that does not exist.
 */
export function timestampText(text: string): string | null {
  const match = TIMESTAMP.exec(text);
  if (match === null) return null;
  const [, year, month, day, hour, minute, second, fraction, zone, sign, zoneHour, zoneMinute] =
    match as unknown as (string | undefined)[];
  const wrong = outOfRange([year, month, day, hour, minute, second, zoneHour]);
  if (wrong !== null) throw new Error(`${text} is not a date: ${wrong}`);
  const date = `${year}-${pad(month ?? "")}-${pad(day ?? "")}`;
  if (hour === undefined) return date;
  let offset = "";
  if (zone === "Z") offset = "Z";
  else if (zone !== undefined) offset = `${sign}${pad(zoneHour ?? "0")}:${zoneMinute ?? "00"}`;
  const digits = fraction === undefined || fraction === "" ? "" : `.${fraction}`;
  return `${date}T${pad(hour)}:${minute}:${second}${digits}${offset}`;
}

type OnError = (message: string) => void;

const BOOLEANS = new Map([
  ...["yes", "true", "on"].map((word) => [word, true] as const),
  ...["no", "false", "off"].map((word) => [word, false] as const),
]);

/** PyYAML's `construct_yaml_int`: `_` ignored, `0b`, `0x`, a leading `0` (octal), `1:30`. */
function explicitInt(text: string): bigint | null {
  let value = text.replaceAll("_", "");
  let sign = 1n;
  if (value.startsWith("-")) sign = -1n;
  if (value.startsWith("-") || value.startsWith("+")) value = value.slice(1);
  let digits: string | null = null;
  if (/^0b[01]+$/.test(value)) digits = value;
  else if (/^0x[0-9a-fA-F]+$/.test(value)) digits = value;
  else if (/^0[0-7]+$/.test(value)) digits = `0o${value.slice(1)}`;
  else if (/^\d+$/.test(value)) digits = value;
  else if (/^\d+(?::\d+)+$/.test(value)) {
    return sign * value.split(":").reduce((sum, part) => sum * 60n + BigInt(part), 0n);
  }
  return digits === null ? null : sign * BigInt(digits);
}

const PYTHON_FLOAT = /^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|inf(?:inity)?|nan)$/;

/** PyYAML's `construct_yaml_float`: `_` ignored, `.inf`, `.nan`, `1:30.5`, or Python's float(). */
function explicitFloat(text: string): number | null {
  let value = text.replaceAll("_", "").toLowerCase().trim();
  let sign = 1;
  if (value.startsWith("-")) sign = -1;
  if (value.startsWith("-") || value.startsWith("+")) value = value.slice(1);
  if (value === ".inf") return sign * Infinity;
  if (value === ".nan") return NaN;
  if (/^\d+(?::\d+)*:\d+(?:\.\d*)?$/.test(value)) {
    return sign * value.split(":").reduce((sum, part) => sum * 60 + Number(part), 0);
  }
  if (!PYTHON_FLOAT.test(value)) return null;
  if (value.endsWith("nan")) return NaN;
  const number = /inf/.test(value) ? (value.startsWith("-") ? -Infinity : Infinity) : Number(value);
  return sign * number;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `!!binary`: base64 (line breaks and blanks ignored) as its bytes. */
function binaryBytes(text: string, onError: OnError): Buffer | string {
  const base64 = text.replace(/[ \t\r\n]/g, "");
  if (!BASE64.test(base64)) {
    onError(`!!binary holds text that is not base64: ${text.slice(0, 40)}`);
    return text;
  }
  return Buffer.from(base64, "base64");
}

/** A resolver for an explicit tag, which reports (the file's error) what it cannot take. */
function explicit(
  name: string,
  what: string,
  construct: (text: string) => unknown,
): Yaml.ScalarTag {
  return {
    tag: tagName(name),
    default: false,
    identify: () => false,
    resolve(text: string, onError: OnError) {
      const value = construct(text);
      if (value !== null || name === "null") return value as Yaml.Scalar;
      onError(`!!${name} ${JSON.stringify(text)}: not ${what} (as in Python's yaml)`);
      return text as unknown as Yaml.Scalar;
    },
  };
}

/** Explicit tags first: an explicit `!!float` takes the first `!!float` tag without a test. */
const EXPLICIT: Yaml.ScalarTag[] = [
  explicit("null", "null", () => null),
  explicit("bool", "a boolean (yes/no, true/false, on/off)", (text) => {
    return BOOLEANS.get(text.toLowerCase()) ?? null;
  }),
  explicit("int", "an integer", explicitInt),
  explicit("float", "a number", explicitFloat),
  explicit("timestamp", "a date or date-time (YYYY-MM-DD, YYYY-MM-DD hh:mm:ss)", timestampText),
  {
    tag: tagName("binary"),
    default: false,
    identify: () => false,
    resolve: (text: string, onError: OnError) => binaryBytes(text, onError) as never,
  },
];

/** PyYAML's implicit resolvers, where the `yaml` package's YAML 1.1 schema reads more. */
const PY_TRUE = /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/;
const PY_FALSE = /^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$/;
const PY_DECIMAL = /^[-+]?(?:0|[1-9][0-9_]*)$/;
const PY_FLOAT =
  /^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?)$/;

function plainTag(scalar: Yaml.ScalarTag): Yaml.ScalarTag[] {
  if (scalar.tag === TIMESTAMP_TAG) {
    return [
      {
        ...scalar,
        test: PLAIN_TIMESTAMP,
        resolve: (text: string) => timestampText(text) ?? text,
        identify: () => false,
      },
    ];
  }
  if (scalar.tag === BOOL_TAG && scalar.test !== undefined) {
    return [{ ...scalar, test: scalar.test.test("true") ? PY_TRUE : PY_FALSE }];
  }
  if (scalar.tag === INT_TAG && scalar.format === undefined)
    return [{ ...scalar, test: PY_DECIMAL }];
  if (scalar.tag === FLOAT_TAG && scalar.format === "EXP") return [];
  if (scalar.tag === FLOAT_TAG && scalar.format === undefined && scalar.test?.test("1.5")) {
    return [{ ...scalar, test: PY_FLOAT, resolve: (text: string) => explicitFloat(text) ?? text }];
  }
  return [scalar];
}

/**
 * The tags of every YAML document dirq reads, from the `yaml` package's YAML 1.1 defaults. A
 * pure function of them: a `%YAML 1.2` line in one file changes nothing for any other.
 */
export function pythonTags(defaults: Yaml.Tags): Yaml.Tags {
  const tags = defaults.flatMap((tag): Yaml.Tags => {
    return typeof tag === "object" && !("collection" in tag && tag.collection !== undefined)
      ? plainTag(tag as Yaml.ScalarTag)
      : [tag];
  });
  return [...EXPLICIT, ...tags];
}
