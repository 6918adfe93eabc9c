import { DirqError } from "../errors.js";
import { keywordOf, type SqlToken } from "./sql-tokens.js";
import { analysisOf, type StatementAnalysis } from "./statement-analysis.js";

import { HIDDEN_COLUMNS } from "../shared/reserved-names.js";
import { PRAGMAS_NAMING_A_TABLE } from "./table-names.js";

export { HIDDEN_COLUMNS };

const INTERNAL_NAME = /^(?:\w+\.)?_dirq_\w*$/i;

const READ_KEYWORDS = new Set(["SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA"]);
const WRITE_KEYWORDS = new Set([
  "INSERT",
  "UPDATE",
  "DELETE",
  "REPLACE",
  "CREATE",
  "DROP",
  "ALTER",
]);
const TRANSACTION_KEYWORDS = new Set([
  "BEGIN",
  "COMMIT",
  "END",
  "ROLLBACK",
  "SAVEPOINT",
  "RELEASE",
]);
const MAINTENANCE_KEYWORDS = new Set(["VACUUM", "REINDEX", "ANALYZE", "ATTACH", "DETACH"]);

/** Table-valued pragmas whose argument names a table or index. */
const PRAGMA_FUNCTION = /^pragma_\w+$/i;

function isPragmaFunction(word: string): boolean {
  // The prefix first: a regular expression costs its compilation in every process.
  return word.toLowerCase().startsWith("pragma_") && PRAGMA_FUNCTION.test(word);
}

/** Pragmas that are safe to read bare; with an argument several of them would change a setting. */
const PRAGMAS_READ_BARE = new Set([
  ...PRAGMAS_NAMING_A_TABLE,
  "database_list",
  "compile_options",
  "function_list",
  "module_list",
  "pragma_list",
  "collation_list",
  "user_version",
  "schema_version",
  "application_id",
  "data_version",
  "encoding",
  "page_size",
  "page_count",
  "freelist_count",
  "foreign_keys",
  "case_sensitive_like",
]);

function rejected(message: string): DirqError {
  return new DirqError(
    "QUERY_NOT_READONLY",
    `${message}. dirq is read-only: only SELECT, WITH, VALUES, EXPLAIN and reading PRAGMAs are allowed`,
  );
}

function checkPragma(tokens: SqlToken[]): void {
  // PRAGMA [schema.]name [= value | (argument)]
  let nameIndex = 1;
  if (tokens[2]?.text === ".") nameIndex = 3;
  const name = tokens[nameIndex]?.value.toLowerCase() ?? "";
  const after = tokens[nameIndex + 1];
  if (after?.text === "=")
    throw rejected(`PRAGMA assignment "PRAGMA ${name} = ..." is not allowed`);
  const hasArgument = after?.text === "(";
  const allowed = hasArgument ? PRAGMAS_NAMING_A_TABLE : PRAGMAS_READ_BARE;
  if (!allowed.has(name)) {
    const form = hasArgument ? `PRAGMA ${name}(...)` : `PRAGMA ${name}`;
    throw rejected(`${form} is not allowed: it can change the database or its settings`);
  }
}

function checkInternalNames(tokens: SqlToken[]): void {
  for (const token of tokens) {
    const named = token.kind === "word" || token.kind === "identifier" || token.kind === "string";
    if (!named || HIDDEN_COLUMNS.has(token.value.toLowerCase())) continue;
    // The native reader of whole files reads any path it is given: only dirq itself uses it.
    if (token.value.toLowerCase().startsWith("dirq_jsonl_file")) {
      throw new DirqError("QUERY_INTERNAL_TABLE", `${token.value} is internal to dirq`);
    }
    // The substring first: a regular expression costs its compilation in every process.
    if (token.value.toLowerCase().includes("_dirq_") && INTERNAL_NAME.test(token.value)) {
      throw new DirqError(
        "QUERY_INTERNAL_TABLE",
        `${token.value} is an internal dirq table and cannot be queried`,
      );
    }
  }
}

function checkNoParameters(tokens: SqlToken[]): void {
  const parameter = tokens.find((token) => token.kind === "variable");
  if (parameter === undefined) return;
  throw new DirqError(
    "QUERY_PARAMETERS",
    `the statement has a bound parameter (${parameter.text}), and dirq has no values to bind: write the value into the SQL instead`,
  );
}

function checkSingleStatement(tokens: SqlToken[]): void {
  const firstSemicolon = tokens.findIndex((token) => token.text === ";");
  if (firstSemicolon === -1) return;
  if (tokens.slice(firstSemicolon + 1).some((token) => token.text !== ";")) {
    throw new DirqError(
      "QUERY_MULTIPLE_STATEMENTS",
      "more than one statement: send one statement per query",
    );
  }
}

function checkFirstKeyword(tokens: SqlToken[]): void {
  const keyword = keywordOf(tokens[0]);
  if (keyword === "EXPLAIN") {
    let inner = 1;
    if (keywordOf(tokens[1]) === "QUERY" && keywordOf(tokens[2]) === "PLAN") inner = 3;
    checkFirstKeyword(tokens.slice(inner));
    return;
  }
  if (keyword === "PRAGMA") {
    checkPragma(tokens);
    return;
  }
  if (keyword && READ_KEYWORDS.has(keyword)) return;
  const shown = keyword ?? tokens[0]?.text ?? "";
  if (keyword && WRITE_KEYWORDS.has(keyword)) throw rejected(`${keyword} writes to the database`);
  if (keyword && TRANSACTION_KEYWORDS.has(keyword)) {
    throw rejected(`transaction statement ${keyword} is not allowed`);
  }
  if (keyword && MAINTENANCE_KEYWORDS.has(keyword)) {
    throw rejected(`${keyword} is not allowed: it can create or change files`);
  }
  // No SQLite statement starts with anything else: say what SQLite would say.
  throw new DirqError("SQL_ERROR", `near "${shown}": syntax error`);
}

/**
 * A table-valued pragma (`pragma_table_info(...)`) may only name its table with literals:
 * a computed name could spell an internal table that no token shows.
 */
function checkPragmaFunctions(tokens: SqlToken[]): void {
  tokens.forEach((token, i) => {
    if (token.kind !== "word" || !isPragmaFunction(token.text)) return;
    if (tokens[i + 1]?.text !== "(") {
      // Without its argument list, a table-valued pragma takes its table name from the hidden
      // `arg` column, which a WHERE or ON clause can compute: `arg = '_dirq' || '_x'`.
      const pragma = token.text.toLowerCase().slice("pragma_".length);
      if (PRAGMAS_NAMING_A_TABLE.has(pragma) && pragma !== "table_list") {
        throw new DirqError(
          "QUERY_INTERNAL_TABLE",
          `${token.text} needs its table name in parentheses here, as in ${token.text}('./'), so that internal _dirq_ tables stay hidden`,
        );
      }
      return;
    }
    for (let j = i + 2; j < tokens.length && tokens[j]?.text !== ")"; j++) {
      const argument = tokens[j] as SqlToken;
      const literal = ["string", "identifier", "word"].includes(argument.kind);
      if (!literal && argument.text !== ",") {
        throw new DirqError(
          "QUERY_INTERNAL_TABLE",
          `${token.text}(...) takes only literal names here, so that internal _dirq_ tables stay hidden: write the table name as a string`,
        );
      }
    }
  });
}

/**
 * Rejects, before anything is prepared or run, every statement that is not a single read:
 * writes, ATTACH/DETACH, VACUUM (INTO), PRAGMA assignments, transactions, several statements,
 * and any mention of an internal `_dirq_` table. SQLite's own `readonly` flag is checked
 * afterwards as a second line (see `run-query.ts`).
 */
export function checkReadOnlyStatement(
  statement: string | StatementAnalysis,
  options: { parameters?: boolean } = {},
): void {
  const tokens = [...analysisOf(statement).tokens];
  if (tokens.length === 0 || tokens.every((token) => token.text === ";")) {
    throw new DirqError("QUERY_EMPTY", "empty statement: give one SQL statement to run");
  }
  checkFirstKeyword(tokens);
  checkSingleStatement(tokens);
  // Only the SDK has values to bind (`parameters`); the CLI and HTTP have none.
  if (options.parameters !== true) checkNoParameters(tokens);
  checkInternalNames(tokens);
  checkPragmaFunctions(tokens);
}

/**
 * Table names a statement asks about through a pragma (`PRAGMA table_info(x)`,
 * `pragma_table_info('x')` and the like): a path-table named only there must exist for the
 * answer to describe it.
 */
export function tablesDescribedBy(statement: string | StatementAnalysis): string[] {
  return [...analysisOf(statement).describedTables];
}

/** True when the statement is an EXPLAIN (which compiles but never reads rows). */
export function isExplain(statement: string | StatementAnalysis): boolean {
  return analysisOf(statement).isExplain;
}
