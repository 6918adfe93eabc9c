import { quoteIdentifier } from "../indexer/database.js";
import { analysisOf, type StatementAnalysis } from "./statement-analysis.js";

const PATH_LIKE = /^\.(?:\/|$)/;
/** Marks a SQLite name made for a case variant; not a character paths normally contain. */
const VARIANT_MARK = "\u2051";

/**
 * SQLite compares table names ignoring ASCII case, but `'./Case.md'` and `'./case.md'` are
 * different files. A path-table whose name differs only in case from one already in use gets
 * a SQLite name of its own, and statements are rewritten to use it.
 */
export class CaseVariants {
  private readonly aliasByPath = new Map<string, string>();
  private readonly pathByAlias = new Map<string, string>();

  /** The path-table name behind a SQLite table name (itself unless it is a variant's). */
  pathOf(tableName: string): string {
    return this.pathByAlias.get(tableName.toLowerCase()) ?? tableName;
  }

  private aliasFor(path: string): string {
    let alias = this.aliasByPath.get(path);
    if (alias === undefined) {
      alias = `${path}${VARIANT_MARK}${this.aliasByPath.size + 2}`;
      this.aliasByPath.set(path, alias);
      this.pathByAlias.set(alias.toLowerCase(), path);
    }
    return alias;
  }

  /**
   * Rewrites every path-table name (wherever a table name stands: FROM, JOIN, comma lists,
   * CTE bodies, pragma arguments) that differs only in case from a name in `inUse` (existing
   * path-tables) or from one earlier in the statement. Returns `sql` itself when there is
   * nothing to rewrite. `inUse` may be given as a function: it is then called only for a
   * statement that names a path-table (listing every table in use is not free).
   */
  rewrite(
    statement: string | StatementAnalysis,
    inUse: Iterable<string> | (() => Iterable<string>),
  ): string {
    const { sql, tableNames } = analysisOf(statement);
    const named = tableNames.some(
      ({ token }) =>
        (token.kind === "string" || token.kind === "identifier") && PATH_LIKE.test(token.value),
    );
    if (!named) return sql;
    const spellings = new Map<string, string>();
    for (const name of typeof inUse === "function" ? inUse() : inUse) {
      if (!this.pathByAlias.has(name.toLowerCase())) spellings.set(name.toLowerCase(), name);
    }
    let rewritten = "";
    let copiedUpTo = 0;
    for (const { token, place } of tableNames) {
      if (token.kind !== "string" && token.kind !== "identifier") continue;
      if (!PATH_LIKE.test(token.value)) continue;
      const first = spellings.get(token.value.toLowerCase());
      if (first === undefined) spellings.set(token.value.toLowerCase(), token.value);
      if (first === undefined || first === token.value) continue;
      const alias = this.aliasFor(token.value);
      // In a pragma's argument list a name is an expression: a string literal says it safely.
      const replacement =
        place === "pragma" ? `'${alias.replaceAll("'", "''")}'` : quoteIdentifier(alias);
      rewritten += sql.slice(copiedUpTo, token.start) + replacement;
      copiedUpTo = token.start + token.text.length;
    }
    return copiedUpTo === 0 ? sql : rewritten + sql.slice(copiedUpTo);
  }
}
