import { keywordOf, significantTokens } from "./sql-tokens.js";

/** Result column metadata as better-sqlite3 reports it. */
export interface ResultColumn {
  name: string;
  /** The table column a result column comes from, when it comes straight from one. */
  column: string | null;
}

/**
 * How often each hidden name is written inside a select list (between a SELECT and its FROM,
 * at any nesting depth): those are the copies the statement asked for by name.
 */
function selectListMentions(sql: string, hidden: ReadonlySet<string>): Map<string, number> {
  const mentions = new Map<string, number>();
  const openSelects: number[] = []; // paren depth of each SELECT whose FROM has not come yet
  let depth = 0;
  for (const token of significantTokens(sql)) {
    if (token.text === "(") depth++;
    else if (token.text === ")") {
      depth--;
      while (openSelects.length > 0 && (openSelects.at(-1) ?? 0) > depth) openSelects.pop();
    }
    const keyword = keywordOf(token);
    if (keyword === "SELECT") openSelects.push(depth);
    else if (keyword === "FROM" && openSelects.at(-1) === depth) openSelects.pop();
    const name = token.value.toLowerCase();
    if (openSelects.length > 0 && hidden.has(name) && token.kind !== "string") {
      mentions.set(name, (mentions.get(name) ?? 0) + 1);
    }
  }
  return mentions;
}

/**
 * Positions of the result columns to return. Hidden columns reach a result through `SELECT *`;
 * those copies are left out. A copy the statement names in a select list is kept (the last
 * copies, since `*, _dirq_file_path` lists the star's copy first), and so is an aliased one.
 */
export function visibleColumnPositions(
  columns: readonly ResultColumn[],
  sql: string,
  hidden: ReadonlySet<string>,
): number[] {
  const mentions = selectListMentions(sql, hidden);
  const remainingCopies = new Map<string, number>();
  for (const column of columns) {
    const origin = column.column?.toLowerCase();
    if (origin !== undefined && hidden.has(origin) && column.name.toLowerCase() === origin) {
      remainingCopies.set(origin, (remainingCopies.get(origin) ?? 0) + 1);
    }
  }
  const shown: number[] = [];
  columns.forEach((column, i) => {
    const origin = column.column?.toLowerCase();
    const starCopy =
      origin !== undefined && hidden.has(origin) && column.name.toLowerCase() === origin;
    if (!starCopy) {
      shown.push(i);
      return;
    }
    const left = remainingCopies.get(origin) ?? 0;
    remainingCopies.set(origin, left - 1);
    if (left <= (mentions.get(origin) ?? 0)) shown.push(i);
  });
  return shown;
}
