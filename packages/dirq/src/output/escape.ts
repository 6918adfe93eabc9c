// Matching control characters is the point of this pattern.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/g;

/** Newline and tab as `\n` and `\t`; any other control character as `\u{hex}`. */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTER, (character) => {
    if (character === "\n") return "\\n";
    if (character === "\t") return "\\t";
    return `\\u{${(character.codePointAt(0) ?? 0).toString(16)}}`;
  });
}
