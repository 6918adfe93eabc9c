import { type Cell, type QueryResult, runQuery, sqlString } from "./api.js";

/** The rows of an answer as objects keyed by column name (the schema's names are distinct). */
function records(result: QueryResult): Record<string, Cell>[] {
  return result.rows.map((row) =>
    Object.fromEntries(result.columns.map((name, index) => [name, row[index] ?? null])),
  );
}

export interface TableInfo {
  name: string;
  type: "table" | "view";
  columns: { name: string; type: string }[];
}

export interface Schema {
  /** Config tables (and views their `ddl` made), with their columns. */
  named: TableInfo[];
  /** Path-tables some query has built (they stay current from then on). */
  pathTables: string[];
}

export type SchemaAnswer =
  { ok: true; schema: Schema } | { ok: false; status: number; message: string };

const HIDDEN_COLUMNS = new Set(["_dirq_file_path", "_dirq_row_index"]);
/** The stat columns every path-table has (without a parser). */
export const PATH_TABLE_COLUMNS = ["path", "basename", "dir", "ext", "size", "mtime", "ctime"];

/**
 * Reads the schema with ordinary queries: `sqlite_master` for the tables, then one
 * `pragma_table_info('<name>')` per named table (dirq takes only literal names there).
 */
export async function loadSchema(): Promise<SchemaAnswer> {
  const master = await runQuery(
    "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name",
  );
  if (!master.ok) return { ok: false, status: master.status, message: master.message };
  const named: TableInfo[] = [];
  const pathTables: string[] = [];
  for (const row of records(master)) {
    const name = String(row.name);
    if (/^_dirq_/i.test(name) || /^sqlite_/i.test(name)) continue;
    if (name === "." || name.startsWith("./")) pathTables.push(name);
    else named.push({ name, type: row.type === "view" ? "view" : "table", columns: [] });
  }
  if (named.length > 0) {
    const parts = named.map(
      (table, index) =>
        `SELECT ${index} AS t, cid, name, type FROM pragma_table_info(${sqlString(table.name)})`,
    );
    const columns = await runQuery(`${parts.join(" UNION ALL ")} ORDER BY t, cid`);
    if (columns.ok) {
      for (const row of records(columns)) {
        const table = named[Number(row.t)];
        const name = String(row.name);
        if (table !== undefined && !HIDDEN_COLUMNS.has(name)) {
          table.columns.push({ name, type: row.type === null ? "" : String(row.type) });
        }
      }
    }
  }
  return { ok: true, schema: { named, pathTables } };
}

/** Quotes a table name for SQL: bare when it is a plain identifier, else in double quotes. */
export function tableReference(name: string): string {
  if (name === "." || name.startsWith("./")) return sqlString(name);
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

/** Renders the sidebar; `onPick` gets a starter statement for a clicked table. */
export function renderSchema(
  target: HTMLElement,
  schema: Schema,
  onPick: (sql: string) => void,
): void {
  const parts: HTMLElement[] = [];
  const section = (title: string): HTMLElement => {
    const heading = document.createElement("h3");
    heading.textContent = title;
    parts.push(heading);
    return heading;
  };
  const pickButton = (name: string, label = name): HTMLButtonElement => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "table-name";
    button.textContent = label;
    button.title = `Put SELECT * FROM ${tableReference(name)} in the editor`;
    button.addEventListener("click", () =>
      onPick(`SELECT * FROM ${tableReference(name)} LIMIT 100`),
    );
    return button;
  };

  section("Tables");
  if (schema.named.length === 0) {
    const none = document.createElement("p");
    none.className = "hint";
    none.textContent = "No named tables (they come from a config passed with -c).";
    parts.push(none);
  }
  for (const table of schema.named) {
    const details = document.createElement("details");
    details.open = true;
    details.className = "table";
    const summary = document.createElement("summary");
    summary.append(pickButton(table.name));
    if (table.type === "view") {
      const kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = "view";
      summary.append(" ", kind);
    }
    const list = document.createElement("ul");
    list.className = "columns";
    list.setAttribute("aria-label", `Columns of ${table.name}`);
    for (const column of table.columns) {
      const item = document.createElement("li");
      const name = document.createElement("span");
      name.className = "column-name";
      name.textContent = column.name;
      const type = document.createElement("span");
      type.className = "column-type";
      type.textContent = column.type;
      item.append(name, " ", type);
      list.append(item);
    }
    details.append(summary, list);
    parts.push(details);
  }

  section("Path-tables");
  const hint = document.createElement("p");
  hint.className = "hint";
  hint.append(
    "A quoted path or glob in FROM is a table, one row per file: ",
    code("FROM './'"),
    ", ",
    code("FROM './docs/**/*.md'"),
    ". Columns: ",
    code(PATH_TABLE_COLUMNS.join(", ")),
    ".",
  );
  parts.push(hint);
  if (schema.pathTables.length > 0) {
    const list = document.createElement("ul");
    list.className = "path-tables";
    list.setAttribute("aria-label", "Path-tables in use");
    for (const name of schema.pathTables) {
      const item = document.createElement("li");
      item.append(pickButton(name, `'${name}'`));
      list.append(item);
    }
    parts.push(list);
  }
  target.replaceChildren(...parts);
}

function code(text: string): HTMLElement {
  const element = document.createElement("code");
  element.textContent = text;
  return element;
}
