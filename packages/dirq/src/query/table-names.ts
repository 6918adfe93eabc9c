import { keywordOf, type SqlToken } from "./sql-tokens.js";

/** Where a table name stands: in a FROM clause, or as the argument of a pragma. */
export type TableNamePlace = "from" | "pragma";

export interface TableNameToken {
  token: SqlToken;
  place: TableNamePlace;
}

/** Keywords of the clauses that may follow a FROM clause in a SELECT (or end the select). */
export const CLAUSES_AFTER_FROM = [
  "WHERE",
  "GROUP",
  "HAVING",
  "ORDER",
  "LIMIT",
  "WINDOW",
  "UNION",
  "INTERSECT",
  "EXCEPT",
] as const;

/** Keywords that end a FROM clause's list of tables at the same parenthesis depth. */
const FROM_CLAUSE_END = new Set<string>([...CLAUSES_AFTER_FROM, "RETURNING"]);

/** Pragmas whose argument is a table or index name. */
export const PRAGMAS_NAMING_A_TABLE = new Set([
  "table_info",
  "table_xinfo",
  "index_list",
  "index_info",
  "index_xinfo",
  "foreign_key_list",
  "foreign_key_check",
  "integrity_check",
  "quick_check",
  "table_list",
]);

function isName(token: SqlToken | undefined): token is SqlToken {
  return token?.kind === "string" || token?.kind === "identifier" || token?.kind === "word";
}

/** The pragma a word names, as `PRAGMA name(...)` or the table-valued `pragma_name(...)`. */
function pragmaNamed(tokens: readonly SqlToken[], i: number): string | null {
  const token = tokens[i];
  if (token?.kind !== "word") return null;
  const word = token.value.toLowerCase();
  if (word.startsWith("pragma_")) return word.slice("pragma_".length);
  const before = keywordOf(tokens[i - 1]);
  const twoBefore = keywordOf(tokens[i - 3]);
  if (before === "PRAGMA" || (tokens[i - 1]?.text === "." && twoBefore === "PRAGMA")) return word;
  return null;
}

/**
 * Every token that stands where a table name stands, found in one pass: after FROM and JOIN,
 * after each comma of a FROM clause's table list (at any nesting: subqueries and CTE bodies
 * have their own), and as the first argument of a pragma that names a table
 * (`PRAGMA table_info('./a')`, `pragma_table_info('./a')`). `tokens` are significant tokens.
 */
export function tableNameTokens(tokens: readonly SqlToken[]): TableNameToken[] {
  const found: TableNameToken[] = [];
  /** Per open parenthesis depth: is a FROM clause's table list open there? */
  const inFrom: boolean[] = [false];
  let depth = 0;
  tokens.forEach((token, i) => {
    const keyword = keywordOf(token);
    if (token.text === "(") {
      depth++;
      inFrom[depth] = false;
      return;
    }
    if (token.text === ")") {
      inFrom[depth] = false;
      depth = Math.max(0, depth - 1);
      return;
    }
    if (keyword === "FROM" || keyword === "JOIN") {
      inFrom[depth] = true;
      if (isName(tokens[i + 1])) found.push({ token: tokens[i + 1] as SqlToken, place: "from" });
      return;
    }
    if (keyword !== null && FROM_CLAUSE_END.has(keyword)) inFrom[depth] = false;
    if (token.text === "," && inFrom[depth] && isName(tokens[i + 1])) {
      found.push({ token: tokens[i + 1] as SqlToken, place: "from" });
      return;
    }
    const pragma = pragmaNamed(tokens, i);
    if (pragma !== null && PRAGMAS_NAMING_A_TABLE.has(pragma) && tokens[i + 1]?.text === "(") {
      const argument = tokens[i + 2];
      if (argument?.kind === "string" || argument?.kind === "identifier") {
        found.push({ token: argument, place: "pragma" });
      }
    }
  });
  return found;
}

/** Words that may follow a table name in a FROM clause and are not its alias. */
const NOT_AN_ALIAS = new Set([
  ...CLAUSES_AFTER_FROM,
  "ON",
  "USING",
  "JOIN",
  "LEFT",
  "RIGHT",
  "FULL",
  "INNER",
  "CROSS",
  "NATURAL",
  "OUTER",
  "INDEXED",
  "NOT",
  "RETURNING",
]);

/** A table a FROM clause names, and the alias it is given there (`null`: none). */
export interface NamedTable {
  name: string;
  alias: string | null;
}

/**
 * The tables the FROM clauses of a statement name (`tableNames` of its tokens), with their
 * aliases: `FROM t AS a`, `FROM t a`, `FROM t "a"`.
 */
export function namedTables(
  tokens: readonly SqlToken[],
  tableNames: readonly TableNameToken[],
): NamedTable[] {
  return tableNames
    .filter((name) => name.place === "from")
    .map(({ token }) => {
      const at = tokens.indexOf(token);
      const next = tokens[at + 1];
      const keyword = keywordOf(next);
      let alias: SqlToken | undefined;
      if (keyword === "AS") alias = tokens[at + 2];
      else if (next?.kind === "identifier") alias = next;
      else if (keyword !== null && !NOT_AN_ALIAS.has(keyword)) alias = next;
      return { name: token.value, alias: isName(alias) ? alias.value : null };
    });
}
