/**
 * Control characters, and the characters that would move or reorder what follows them on a
 * terminal: the line and paragraph separators (U+2028, U+2029) and the bidirectional controls
 * (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), with which a file name could show
 * as another.
 */
// Matching control characters is the point of this pattern.
const CONTROL_CHARACTER =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** Newline and tab as `\n` and `\t`; any other control character as `\u{hex}`. */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTER, (character) => {
    if (character === "\n") return "\\n";
    if (character === "\t") return "\\t";
    return `\\u{${(character.codePointAt(0) ?? 0).toString(16)}}`;
  });
}
