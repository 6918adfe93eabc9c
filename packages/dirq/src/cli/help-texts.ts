import {
  COMPLETION_HELP_TEXT,
  HELP_TEXT,
  type HelpTopic,
  INIT_HELP_TEXT,
  QUERY_HELP_TEXT,
  REPL_HELP_TEXT,
  SERVER_HELP_TEXT,
  WATCH_HELP_TEXT,
} from "./args.js";

/**
 * Every `--help` text by topic: the one source of the options' documentation. The man page
 * (scripts/build-man.mjs) and the shell completions (completion.ts) are made from these.
 */
export const HELP_TEXTS: Readonly<Record<HelpTopic, string>> = {
  dirq: HELP_TEXT,
  query: QUERY_HELP_TEXT,
  repl: REPL_HELP_TEXT,
  watch: WATCH_HELP_TEXT,
  init: INIT_HELP_TEXT,
  server: SERVER_HELP_TEXT,
  completion: COMPLETION_HELP_TEXT,
};

/** The files dirq reads and writes: the man page's FILES section (no --help prints it). */
export const FILES_TEXT = `.dirq.toml
    a config: dirq init writes one; it is read only when given with -c
.dirq/cache.db
    the index --persist keeps (--persist=<path>: that file instead)
$DIRQ_CACHE_DIR, else $XDG_CACHE_HOME/dirq, else ~/.cache/dirq
(~/Library/Caches/dirq on macOS)
    the cache folder: compiled code (*.v8cache), the native scan helper (native-*),
    plugin discovery (plugins.json), the launchers' installs of the CLI (npm/<version>);
    deleting it is always safe
$XDG_DATA_HOME/dirq/history, else ~/.local/share/dirq/history
    the REPL's statement history (the last 1000)
`;
