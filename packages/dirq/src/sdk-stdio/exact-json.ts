import { jsonValue } from "../output/json.js";

/**
 * Marks a bigint written as a string by JSON.stringify, then unwrapped to its digits. A
 * private-use character: text that holds it takes the slow, exact way instead.
 */
const BIGINT_MARK = "\uE000";
const MARKED_BIGINT = /"\uE000(-?\d+)"/g;

/**
 * JSON text of what the SDK hands out (rows, row events, table lists): an integer beyond 2^53
 * (a bigint) is written as its digits, as the CLI's JSON writes it. JSON.stringify does the
 * work: plainly while there is no bigint, which is nearly always, else with bigints marked.
 */
export function exactJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return withMarkedBigints(value) ?? withBigints(value);
  }
}

/** JSON.stringify with bigints as marked strings, unwrapped; `null` if a string had a mark. */
function withMarkedBigints(value: unknown): string | null {
  let marksInText = false;
  const text = JSON.stringify(value, (key, field: unknown) => {
    if (typeof field === "bigint") return `${BIGINT_MARK}${field}`;
    if (key.includes(BIGINT_MARK)) marksInText = true;
    if (typeof field === "string" && field.includes(BIGINT_MARK)) marksInText = true;
    return field;
  });
  return marksInText ? null : text.replace(MARKED_BIGINT, "$1");
}

function withBigints(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(withBigints).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value).map(
      ([key, field]) => `${JSON.stringify(key)}:${withBigints(field)}`,
    );
    return `{${fields.join(",")}}`;
  }
  return typeof value === "bigint" || typeof value === "number" || typeof value === "string"
    ? jsonValue(value)
    : (JSON.stringify(value) ?? "null");
}
