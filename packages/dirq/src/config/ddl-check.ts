import { keywordOf, type SqlToken, significantTokens } from "../query/sql-tokens.js";

/** Virtual-table modules a `ddl` may use: full-text search, nothing that reads files. */
const ALLOWED_MODULES = new Set(["fts3", "fts4", "fts5"]);

/**
 * Splits `ddl` into statements at top-level semicolons; a trigger's `BEGIN ... END` body (and
 * a `CASE ... END` inside it) does not end a statement.
 */
function statements(tokens: readonly SqlToken[]): SqlToken[][] {
  const out: SqlToken[][] = [[]];
  let blocks = 0;
  for (const token of tokens) {
    const keyword = keywordOf(token);
    if (keyword === "BEGIN" || keyword === "CASE") blocks++;
    else if (keyword === "END" && blocks > 0) blocks--;
    if (token.text === ";" && blocks === 0) {
      out.push([]);
      continue;
    }
    out.at(-1)?.push(token);
  }
  return out.filter((statement) => statement.length > 0);
}

/** What one statement creates, or why it is refused. */
function checkStatement(tokens: readonly SqlToken[]): string | null {
  const words = tokens.map((token) => keywordOf(token));
  const shown = tokens
    .slice(0, 3)
    .map((token) => token.text)
    .join(" ");
  if (words[0] !== "CREATE") {
    return `'${shown} ...' is not allowed: ddl may only CREATE indexes, views, triggers and full-text (fts3/fts4/fts5) tables in the index`;
  }
  let i = 1;
  if (words[i] === "TEMP" || words[i] === "TEMPORARY") i++;
  if (words[i] === "UNIQUE") i++;
  const kind = words[i];
  if (kind === "INDEX" || kind === "VIEW" || kind === "TRIGGER") {
    return checkSchemaName(tokens, i + 1);
  }
  if (kind === "VIRTUAL" && words[i + 1] === "TABLE") {
    const using = words.indexOf("USING");
    const module = using === -1 ? "" : (tokens[using + 1]?.value.toLowerCase() ?? "");
    if (!ALLOWED_MODULES.has(module)) {
      return `virtual table module '${module}' is not allowed: ddl may only create full-text tables (fts3, fts4, fts5)`;
    }
    return checkSchemaName(tokens, i + 2);
  }
  if (kind === "TABLE") {
    return `'${shown} ...' is not allowed: ddl may only CREATE indexes, views, triggers and full-text (fts3/fts4/fts5) tables in the index`;
  }
  // Not a CREATE that SQLite knows: running it gives SQLite's own syntax error.
  return null;
}

/** `CREATE INDEX [IF NOT EXISTS] [schema.]name`: only the index's own schemas. */
function checkSchemaName(tokens: readonly SqlToken[], at: number): string | null {
  let i = at;
  if (keywordOf(tokens[i]) === "IF") i += 3;
  if (tokens[i + 1]?.text !== ".") return null;
  const schema = tokens[i]?.value.toLowerCase();
  if (schema === "main" || schema === "temp") return null;
  return `schema '${tokens[i]?.value}' is not allowed: ddl creates objects in the index only`;
}

/**
 * Checks a config table's `ddl`: every statement must create an index, a view, a trigger or a
 * full-text table. `ATTACH`, `DETACH`, `VACUUM`, `PRAGMA` and anything else that could create
 * or change a file (or another database) is refused. Returns the reason, or `null` when fine.
 */
export function checkDdl(ddl: string): string | null {
  for (const statement of statements(significantTokens(ddl))) {
    const problem = checkStatement(statement);
    if (problem !== null) return problem;
  }
  return null;
}
