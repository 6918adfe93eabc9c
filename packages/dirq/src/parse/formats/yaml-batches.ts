import type * as Yaml from "yaml";
import { lazyModule } from "../../lazy-module.js";

const yaml = lazyModule<typeof Yaml>("yaml");

/**
 * A YAML file's tokens as the `yaml` package's parser makes them, where a document whose top
 * is a long block list (`- ` items, the usual shape of a file of rows) is also cut into
 * batches while it is read: the parser holds a document's whole syntax tree until its end,
 * and a 10 MB list held whole (its tree, then its nodes, then its values) costs the garbage
 * collector more the larger it grows. A batch is a document token of the same start holding
 * the list's first finished items; the document token the parser gives at the end holds the
 * items after the last batch.
 */
export type StreamToken =
  { kind: "token"; token: Yaml.CST.Token } | { kind: "batch"; document: Yaml.CST.Document };

/** How many items of a top-level list are composed at a time, unless told otherwise. */
export const BATCH_ITEMS = 1024;

/** Tokens that may come between two documents without making the second one unbatchable. */
const BLANK = new Set(["space", "newline", "comment", "byte-order-mark"]);
/** What a batchable document's start may hold: no tag or anchor on the list itself. */
const PLAIN_START = new Set(["doc-start", "space", "newline", "comment"]);

/**
 * The first finished items of the top-level list being read, as a document token, once more
 * than `batchItems` of them are waiting; or null. The parser still looks at the last item and
 * the one before it (a comment indented under an item goes to its end), so both stay.
 */
function finishedItems(stack: Yaml.CST.Token[], batchItems: number): Yaml.CST.Document | null {
  const [document, list] = stack;
  if (document?.type !== "document" || list?.type !== "block-seq") return null;
  if (list.items.length < batchItems + 2) return null;
  if (!document.start.every((token) => PLAIN_START.has(token.type))) return null;
  const items = list.items.splice(0, list.items.length - 2);
  return { ...document, end: undefined, value: { ...list, items } };
}

/**
 * The stream's tokens and batches, in order (a document's batches come before its token).
 * Only a document that nothing but blanks and comments separates from the one before it is cut
 * (a directive, an error or a stray token between them stays with the document as it was), so
 * that a batch raises no problem of the stream's before one that comes earlier in the text.
 */
export function* yamlStream(
  text: string,
  onNewLine: (offset: number) => void,
  batchItems = BATCH_ITEMS,
): Generator<StreamToken> {
  const { Lexer, Parser } = yaml();
  const parser = new Parser(onNewLine);
  onNewLine(0);
  let plain = true;
  const lexemes = new Lexer().lex(text);
  for (let lexeme = lexemes.next(); ; lexeme = lexemes.next()) {
    const tokens = lexeme.done === true ? parser.end() : parser.next(lexeme.value);
    for (const token of tokens) {
      if (token.type === "document") plain = true;
      else if (!BLANK.has(token.type)) plain = false;
      yield { kind: "token", token };
    }
    if (lexeme.done === true) return;
    const document = plain ? finishedItems(parser.stack, batchItems) : null;
    if (document !== null) yield { kind: "batch", document };
  }
}
