/**
 * A name as SQLite compares identifiers: ASCII letters without case, every other character as
 * it is (`Title` and `title` are one column; `É` and `é` are two).
 */
export function foldName(name: string): string {
  return /[A-Z]/.test(name) ? name.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()) : name;
}
