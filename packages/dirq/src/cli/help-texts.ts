import {
  COMPLETION_HELP_TEXT,
  HELP_TEXT,
  type HelpTopic,
  INIT_HELP_TEXT,
  QUERY_HELP_TEXT,
  SERVER_HELP_TEXT,
} from "./args.js";

/**
 * Every `--help` text by topic: the one source of the options' documentation. The man page
 * (scripts/build-man.mjs) and the shell completions (completion.ts) are made from these.
 */
export const HELP_TEXTS: Readonly<Record<HelpTopic, string>> = {
  dirq: HELP_TEXT,
  query: QUERY_HELP_TEXT,
  init: INIT_HELP_TEXT,
  server: SERVER_HELP_TEXT,
  completion: COMPLETION_HELP_TEXT,
};
