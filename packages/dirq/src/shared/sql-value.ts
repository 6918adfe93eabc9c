/** One SQLite value as dirq returns it: INTEGER as bigint (exact), BLOB as Buffer. */
export type SqlValue = null | bigint | number | string | Buffer;
