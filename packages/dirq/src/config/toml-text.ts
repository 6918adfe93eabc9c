/** TOML text dirq writes: in `dirq init`'s starter config and in diagnostics naming a key. */

/** A string as a TOML basic string (JSON's escapes are TOML's; TOML wants DEL escaped too). */
export function tomlString(text: string): string {
  return JSON.stringify(text).replaceAll("\u007f", "\\u007f");
}

/** A key TOML takes as written (bare); any other is written quoted. */
const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** A key as TOML writes it: `title`, `1st-level`, `"Region Name"`. */
export function tomlKey(key: string): string {
  return BARE_KEY.test(key) ? key : tomlString(key);
}
