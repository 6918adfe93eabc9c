/**
 * string-width, as a module of its own: table output imports it when a cell first needs it
 * (see `loadStringWidth` in table.ts), and the CLI's build makes it a chunk (`width`), so its
 * Unicode tables are not in the bundle every start reads. A named export: a chunk's default
 * export would reach an ES module as the whole chunk (Node's rule for CommonJS).
 */
export { default as stringWidth } from "string-width";
