/**
 * What sqlite3 and psql users type first: dot-commands (`.tables`), backslash commands (`\d`,
 * `\q`) and `help`. dirq has none of them (every question is SQL), but none is SQL either, so
 * it answers such a line at once instead of waiting at `...>` for a `;` that never comes.
 */

/** Where to look instead, in SQL: the same question sqlite3's `.tables` answers. */
const TABLES_SQL = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view');";
const SCHEMA_SQL = "SELECT name, sql FROM sqlite_master;";
const LEAVE = "leave with exit, quit or Ctrl-D";

/** The short usage `help` prints. */
export const REPL_HELP = `Statements are SQL (SQLite), ended with ';'. Files are tables:
  SELECT path, size FROM './' ORDER BY size DESC LIMIT 5;   every file below the directory
  SELECT * FROM './docs/*.md';                              a glob
Tables:   ${TABLES_SQL}
Schema:   ${SCHEMA_SQL}  PRAGMA table_info('./');
History:  Up/Down, Ctrl-R to search. Ctrl-C stops a statement or abandons the line.
There are no dot-commands or backslash commands; ${LEAVE}.
`;

export type HabitAnswer = { kind: "hint"; text: string } | { kind: "help" };

/** The argument as an SQL string literal (quotes it was typed with are dropped first). */
function sqlString(argument: string): string {
  const typed = argument.trim();
  const name = /^(['"`])(.*)\1$/.exec(typed)?.[2] ?? typed;
  return `'${name.replaceAll("'", "''")}'`;
}

/**
 * The answer to a line that is a sqlite3/psql command or `help` (typed as a statement's first
 * line), or `null` for anything else.
 */
export function habitAnswer(line: string): HabitAnswer | null {
  const text = line.trim().replace(/;+$/, "").trim();
  if (/^(help|\.help|\\\?|\\h|\\help)$/i.test(text)) return { kind: "help" };
  const dot = /^\.([A-Za-z_]+)(?:\s+(.*))?$/.exec(text);
  if (dot !== null) return { kind: "hint", text: dotHint(dot[1] as string, dot[2]) };
  const backslash = /^\\([A-Za-z?+]+)(?:\s+(.*))?$/.exec(text);
  if (backslash !== null) {
    return { kind: "hint", text: backslashHint(backslash[1] as string, backslash[2]) };
  }
  return null;
}

function dotHint(command: string, argument: string | undefined): string {
  const typed = `.${command}`;
  switch (command.toLowerCase()) {
    case "tables":
      return `${typed}: there are no dot-commands; tables are listed in SQL: ${TABLES_SQL}`;
    case "schema":
    case "fullschema":
      return argument
        ? `${typed}: there are no dot-commands; ask in SQL: SELECT sql FROM sqlite_master WHERE name = ${sqlString(argument)}; or PRAGMA table_info(${sqlString(argument)});`
        : `${typed}: there are no dot-commands; the schema is in SQL: ${SCHEMA_SQL}`;
    case "indexes":
    case "indices":
      return `${typed}: there are no dot-commands; ask in SQL: SELECT name, tbl_name FROM sqlite_master WHERE type = 'index';`;
    case "quit":
    case "exit":
    case "q":
      return `${typed}: there are no dot-commands; ${LEAVE}`;
    default:
      return `${typed}: there are no dot-commands; ask in SQL (${SCHEMA_SQL}), type help for more`;
  }
}

function backslashHint(command: string, argument: string | undefined): string {
  const typed = `\\${command}`;
  switch (command) {
    case "q":
      return `${typed}: there are no backslash commands; ${LEAVE}`;
    case "d":
    case "d+":
      return argument
        ? `${typed}: there are no backslash commands; ask in SQL: PRAGMA table_info(${sqlString(argument)});`
        : `${typed}: there are no backslash commands; tables are listed in SQL: ${TABLES_SQL}`;
    case "dt":
    case "dt+":
    case "dv":
      return `${typed}: there are no backslash commands; tables are listed in SQL: ${TABLES_SQL}`;
    case "di":
      return `${typed}: there are no backslash commands; ask in SQL: SELECT name, tbl_name FROM sqlite_master WHERE type = 'index';`;
    default:
      return `${typed}: there are no backslash commands; ask in SQL (${SCHEMA_SQL}), type help for more`;
  }
}
