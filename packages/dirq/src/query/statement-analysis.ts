import { foldName } from "../shared/sql-names.js";
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
  /**
   * The names the statement may read columns by, folded as SQLite compares them: every word,
   * quoted name and string in it (more than its columns, never fewer). `null` when it may
   * read every column of a table: a `*` result column (`SELECT *`, `t.*`), a NATURAL join, a
   * table a pragma describes.
   */
  readonly namedColumns: ReadonlySet<string> | null;
}

const COMPOUND_WORDS = new Set(["UNION", "INTERSECT", "EXCEPT", "VALUES"]);
/** Words after which a `*` is a result column, not a product. */
const STAR_AFTER = new Set(["SELECT", "DISTINCT", "ALL"]);

function namedColumns(tokens: readonly SqlToken[]): ReadonlySet<string> | null {
  const names = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as SqlToken;
    if (token.kind === "punct" && token.text === "*") {
      const before = tokens[i - 1];
      if (before?.text === "," || before?.text === ".") return null;
      if (STAR_AFTER.has(keywordOf(before) ?? "")) return null;
    } else if (keywordOf(token) === "NATURAL") {
      return null;
    } else if (token.kind === "word" || token.kind === "identifier" || token.kind === "string") {
      names.add(foldName(token.value));
    }
  }
  return names;
}

export function analyzeStatement(sql: string): StatementAnalysis {
  const tokens = significantTokens(sql);
  const tableNames = tableNameTokens(tokens);
  const describedTables = tableNames
    .filter((name) => name.place === "pragma")
    .map((name) => name.token.value);
  return {
    sql,
    tokens,
    tableNames,
    isExplain: keywordOf(tokens[0]) === "EXPLAIN",
    describedTables,
    isCompound: tokens.some((token) => COMPOUND_WORDS.has(keywordOf(token) ?? "")),
    namedColumns: describedTables.length > 0 ? null : namedColumns(tokens),
  };
}

/** Accepts either form, so callers that hold an analysis never tokenize again. */
export function analysisOf(statement: string | StatementAnalysis): StatementAnalysis {
  return typeof statement === "string" ? analyzeStatement(statement) : statement;
}
