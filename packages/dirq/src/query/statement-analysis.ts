import { keywordOf, type SqlToken, significantTokens } from "./sql-tokens.js";
import { type TableNameToken, tableNameTokens } from "./table-names.js";

/**
 * One statement, tokenized once, with what the read-only guard, the case-variant rewrite and
 * the table builder need to know about it.
 */
export interface StatementAnalysis {
  readonly sql: string;
  /** Tokens without whitespace and comments. */
  readonly tokens: readonly SqlToken[];
  /** Every token that stands where a table name stands (FROM, JOIN, commas, pragmas). */
  readonly tableNames: readonly TableNameToken[];
  /** An EXPLAIN compiles but never reads rows. */
  readonly isExplain: boolean;
  /** Table names given to a pragma (`pragma_table_info('./a')`): they must exist first. */
  readonly describedTables: readonly string[];
  /**
   * A compound (UNION, INTERSECT, EXCEPT, VALUES): SQLite then reports the first arm's column
   * origin for the values of every arm.
   */
  readonly isCompound: boolean;
}

const COMPOUND_WORDS = new Set(["UNION", "INTERSECT", "EXCEPT", "VALUES"]);

export function analyzeStatement(sql: string): StatementAnalysis {
  const tokens = significantTokens(sql);
  const tableNames = tableNameTokens(tokens);
  return {
    sql,
    tokens,
    tableNames,
    isExplain: keywordOf(tokens[0]) === "EXPLAIN",
    describedTables: tableNames
      .filter((name) => name.place === "pragma")
      .map((name) => name.token.value),
    isCompound: tokens.some((token) => COMPOUND_WORDS.has(keywordOf(token) ?? "")),
  };
}

/** Accepts either form, so callers that hold an analysis never tokenize again. */
export function analysisOf(statement: string | StatementAnalysis): StatementAnalysis {
  return typeof statement === "string" ? analyzeStatement(statement) : statement;
}
