import { keywordOf, significantTokens, type SqlToken } from "./sql-tokens.js";
import { analysisOf, type StatementAnalysis } from "./statement-analysis.js";
import { CLAUSES_AFTER_FROM } from "./table-names.js";

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
function selectListMentions(
  tokens: readonly SqlToken[],
  hidden: ReadonlySet<string>,
): Map<string, number> {
  const mentions = new Map<string, number>();
  const openSelects: number[] = []; // paren depth of each SELECT whose FROM has not come yet
  let depth = 0;
  for (const token of tokens) {
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

/** A select list item: where it starts in the list, and whether it is `*` or `t.*`. */
function mainSelectItems(tokens: readonly SqlToken[]): { stars: number[]; count: number } | null {
  let depth = 0;
  let start = -1;
  for (let i = 0; i < tokens.length; i++) {
    const text = tokens[i]?.text;
    if (text === "(") depth++;
    else if (text === ")") depth--;
    else if (depth === 0 && keywordOf(tokens[i]) === "SELECT") {
      start = i + 1;
      break;
    }
  }
  if (start === -1) return null;
  const first = keywordOf(tokens[start]);
  if (first === "DISTINCT" || first === "ALL") start++;
  const items: SqlToken[][] = [[]];
  depth = 0;
  for (let i = start; i < tokens.length; i++) {
    const token = tokens[i] as SqlToken;
    if (token.text === "(") depth++;
    else if (token.text === ")") depth--;
    if (depth === 0) {
      const keyword = keywordOf(token);
      if (keyword !== null && SELECT_LIST_END.has(keyword)) break;
      if (token.text === ";") break;
      if (token.text === ",") {
        items.push([]);
        continue;
      }
    }
    items.at(-1)?.push(token);
  }
  const stars: number[] = [];
  items.forEach((item, i) => {
    const last = item.at(-1)?.text;
    if (last === "*" && (item.length === 1 || (item.length === 3 && item[1]?.text === "."))) {
      stars.push(i);
    }
  });
  return { stars, count: items.length };
}

const SELECT_LIST_END = new Set<string>(["FROM", ...CLAUSES_AFTER_FROM]);

/**
 * Positions of the result columns to return. With one `*` in the main select list its
 * columns are known exactly (the other items give one column each): the hidden columns among
 * them are left out and everything else keeps its SELECT order. Otherwise:  Hidden columns reach a result through `SELECT *`;
 * those copies are left out. A copy the statement names in a select list is kept (the last
 * copies, since `*, _dirq_file_path` lists the star's copy first), and so is an aliased one.
 */
export function visibleColumnPositions(
  columns: readonly ResultColumn[],
  statement: string | StatementAnalysis,
  hidden: ReadonlySet<string>,
): number[] {
  const { tokens } = analysisOf(statement);
  const isHidden = (column: ResultColumn) => {
    const origin = column.column?.toLowerCase();
    return origin !== undefined && hidden.has(origin) && column.name.toLowerCase() === origin;
  };
  const list = mainSelectItems(tokens);
  if (list !== null && list.stars.length <= 1 && columns.length >= list.count - 1) {
    const [star] = list.stars;
    const width = columns.length - (list.count - 1);
    const shown: number[] = [];
    columns.forEach((column, i) => {
      const fromStar = star !== undefined && i >= star && i < star + width;
      if (!fromStar || !isHidden(column)) shown.push(i);
    });
    return shown;
  }
  const mentions = selectListMentions(tokens, hidden);
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

/**
 * The hidden names a view the statement reads selects by name (`CREATE VIEW v AS SELECT
 * _dirq_file_path, title FROM t`): SQLite reports their origin as the table's hidden column,
 * but they are the view's own columns, so `SELECT * FROM v` keeps them. A view made with
 * `SELECT *` names none, and its copies stay hidden as the table's do.
 */
export function hiddenNamesSelectedByViews(
  views: () => Iterable<{ name: string; sql: string }>,
  statement: string | StatementAnalysis,
  hidden: ReadonlySet<string>,
): Set<string> {
  const named = new Set(
    analysisOf(statement).tableNames.map(({ token }) => token.value.toLowerCase()),
  );
  const selected = new Set<string>();
  for (const view of views()) {
    if (!named.has(view.name.toLowerCase())) continue;
    for (const name of selectListMentions(significantTokens(view.sql), hidden).keys()) {
      selected.add(name);
    }
  }
  return selected;
}
