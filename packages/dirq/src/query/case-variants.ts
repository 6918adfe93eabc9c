import { significantTokens, type SqlToken } from "./sql-tokens.js";
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
   * path-tables) or from one earlier in the statement, and every column qualifier spelled as
   * a rewritten name (`"./readme.md".path`: SQLite would otherwise match it, ignoring case, to
   * `./README.md`). Returns `sql` itself when there is nothing to rewrite. `inUse` may be
   * given as a function: it is then called only for a statement that names a path-table
   * (listing every table in use is not free).
   */
  rewrite(
    statement: string | StatementAnalysis,
    inUse: Iterable<string> | (() => Iterable<string>),
  ): string {
    const { sql, tokens, tableNames } = analysisOf(statement);
    const named = tableNames.some(({ token }) => isPathName(token));
    if (!named) return sql;
    const spellings = new Map<string, string>();
    for (const name of typeof inUse === "function" ? inUse() : inUse) {
      if (!this.pathByAlias.has(name.toLowerCase())) spellings.set(name.toLowerCase(), name);
    }
    const replacements = new Map<SqlToken, string>();
    const rewrittenSpellings = new Map<string, string>();
    for (const { token, place } of tableNames) {
      if (!isPathName(token)) continue;
      const first = spellings.get(token.value.toLowerCase());
      if (first === undefined) spellings.set(token.value.toLowerCase(), token.value);
      if (first === undefined || first === token.value) continue;
      const alias = this.aliasFor(token.value);
      rewrittenSpellings.set(token.value, alias);
      // In a pragma's argument list a name is an expression: a string literal says it safely.
      replacements.set(
        token,
        place === "pragma" && token.kind !== "string"
          ? `'${alias.replaceAll("'", "''")}'`
          : variantToken(token, alias),
      );
    }
    if (replacements.size === 0) return sql;
    tokens.forEach((token, i) => {
      if (replacements.has(token) || !isPathName(token)) return;
      const alias = rewrittenSpellings.get(token.value);
      const next = tokens[i + 1];
      if (alias !== undefined && next?.kind === "punct" && next.text === ".") {
        replacements.set(token, variantToken(token, alias));
      }
    });
    let rewritten = "";
    let copiedUpTo = 0;
    for (const [token, replacement] of [...replacements].sort(([a], [b]) => a.start - b.start)) {
      rewritten += sql.slice(copiedUpTo, token.start) + replacement;
      copiedUpTo = token.start + token.text.length;
    }
    return rewritten + sql.slice(copiedUpTo);
  }
}

function isPathName(token: SqlToken): boolean {
  return (token.kind === "string" || token.kind === "identifier") && PATH_LIKE.test(token.value);
}

/**
 * The token naming `alias` (its path and the mark) in the quotes `token` was written with:
 * the mark and number go just before the closing quote, so taking them out gives back the
 * token as written (see `withoutVariantNames`).
 */
function variantToken(token: SqlToken, alias: string): string {
  const close = token.text.slice(-1);
  return `${token.text.slice(0, -1)}${alias.slice(token.value.length)}${close}`;
}

const VARIANT_SUFFIX = new RegExp(`${VARIANT_MARK}\\d+$`);

/**
 * A result column's name as the user wrote it: SQLite names an unaliased expression by its
 * text, which after the rewrite may hold a variant's internal name
 * (`(SELECT path FROM "./readme.md⁑2")`); each such quoted name is put back as written.
 */
export function withoutVariantNames(columnName: string): string {
  if (!columnName.includes(VARIANT_MARK)) return columnName;
  let restored = "";
  let copiedUpTo = 0;
  for (const token of significantTokens(columnName)) {
    if (!isPathName(token) || !VARIANT_SUFFIX.test(token.value)) continue;
    const suffix = token.value.length - token.value.search(VARIANT_SUFFIX);
    const end = token.start + token.text.length - 1;
    restored += columnName.slice(copiedUpTo, end - suffix);
    copiedUpTo = end;
  }
  return restored + columnName.slice(copiedUpTo);
}
