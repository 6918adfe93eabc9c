import { randomBytes } from "node:crypto";

/** One part of a `multipart/form-data` body: a text field, or a file. */
export type FormPart =
  { name: string; value: string } | { name: string; file: Uint8Array; filename: string };

/** A header parameter value with the characters that would end it escaped, as browsers do. */
function quoted(value: string): string {
  return value.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

/**
 * Encodes `parts` as `multipart/form-data`, keeping every text value byte for byte. The
 * platform's `FormData` rewrites each line ending in a text value to CRLF (as HTML forms do), so
 * a package description uploaded through it would gain a `\r` on every line.
 */
export function encodeMultipart(parts: readonly FormPart[]): {
  body: Buffer;
  contentType: string;
} {
  const chunks: Buffer[] = [];
  let boundary = `pubtool-${randomBytes(16).toString("hex")}`;
  const contents = parts.map((part) => ("value" in part ? Buffer.from(part.value) : part.file));
  // A boundary that occurs in the data would end a part early; pick another (astronomically rare).
  while (contents.some((content) => Buffer.from(content).includes(boundary))) {
    boundary = `pubtool-${randomBytes(16).toString("hex")}`;
  }
  parts.forEach((part, index) => {
    const disposition =
      "value" in part
        ? `Content-Disposition: form-data; name="${quoted(part.name)}"`
        : `Content-Disposition: form-data; name="${quoted(part.name)}"; filename="${quoted(part.filename)}"\r\nContent-Type: application/octet-stream`;
    chunks.push(Buffer.from(`--${boundary}\r\n${disposition}\r\n\r\n`));
    chunks.push(Buffer.from(contents[index] as Uint8Array));
    chunks.push(Buffer.from("\r\n"));
  });
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
