import { COMPLETION_SHELLS, type CompletionShell, type HelpTopic } from "./args.js";
import { HELP_TEXTS } from "./help-texts.js";

/** What follows an option on the command line, read from its help text's placeholder. */
type ValueKind = "none" | "file" | "dir" | "command" | "word" | { choices: string[] };

interface OptionSpec {
  flags: string[];
  value: ValueKind;
}

function valueKind(column: string): ValueKind {
  const choices = /<([\w]+(?:\|[\w]+)+)>/.exec(column);
  if (choices) return { choices: (choices[1] as string).split("|") };
  if (/<path>/.test(column)) return "file";
  if (/<dir>/.test(column)) return "dir";
  if (/<command>/.test(column)) return "command";
  // An optional value (`--persist[=<path>]`) is not asked for after a space.
  if (/(?:^|[^[=])<\w+>/.test(column)) return "word";
  return "none";
}

/** The options of one help text, with what each takes (see `optionsOf` in help-texts.ts). */
function optionSpecs(helpText: string): OptionSpec[] {
  const specs: OptionSpec[] = [];
  for (const line of helpText.split("\n")) {
    const match = /^ {2}(-[^ ].*?)(?: {2,}|$)/.exec(line);
    if (match === null) continue;
    const column = match[1] as string;
    const flags = [...column.matchAll(/(?:^|[ ,])(--?[A-Za-z][\w-]*)/g)].map((m) => m[1] as string);
    specs.push({ flags, value: valueKind(column) });
  }
  return specs;
}

/** The subcommands the main help lists (`  dirq query ...`), and its own flags' lines. */
function subcommands(): string[] {
  const found = new Set<string>();
  for (const match of HELP_TEXTS.dirq.matchAll(/^ {2}dirq ([a-z]+)/gm))
    found.add(match[1] as string);
  return [...found];
}

/** `dirq --version` and `dirq --help` are usage lines of the main help, not option lines. */
function mainFlags(): string[] {
  return [...HELP_TEXTS.dirq.matchAll(/^ {2}dirq (--[a-z-]+)/gm)].map((m) => m[1] as string);
}

interface Grammar {
  subcommands: string[];
  /** Options by subcommand; `dirq` is the default mode (SQL first, or the REPL). */
  options: Record<"dirq" | Exclude<HelpTopic, "dirq">, OptionSpec[]>;
}

function grammar(): Grammar {
  const dirq = optionSpecs(HELP_TEXTS.dirq);
  for (const flag of mainFlags()) dirq.push({ flags: [flag], value: "none" });
  return {
    subcommands: subcommands(),
    options: {
      dirq,
      query: optionSpecs(HELP_TEXTS.query),
      repl: optionSpecs(HELP_TEXTS.repl),
      init: optionSpecs(HELP_TEXTS.init),
      server: optionSpecs(HELP_TEXTS.server),
      watch: optionSpecs(HELP_TEXTS.watch),
      completion: optionSpecs(HELP_TEXTS.completion),
    },
  };
}

function flagsTakingValue(g: Grammar, kind: (value: ValueKind) => boolean): string[] {
  const flags = new Set<string>();
  for (const specs of Object.values(g.options)) {
    for (const spec of specs) if (kind(spec.value)) for (const flag of spec.flags) flags.add(flag);
  }
  return [...flags];
}

const words = (specs: readonly OptionSpec[]) => specs.flatMap((spec) => spec.flags).join(" ");

function bashScript(g: Grammar): string {
  const choiceCases = Object.values(g.options)
    .flat()
    .filter((spec) => typeof spec.value === "object")
    .map((spec) => {
      const { choices } = spec.value as { choices: string[] };
      return `    ${spec.flags.join("|")}) COMPREPLY=($(compgen -W "${choices.join(" ")}" -- "$cur")); return ;;`;
    });
  const unique = [...new Set(choiceCases)];
  const pattern = (kind: ValueKind) => flagsTakingValue(g, (value) => value === kind).join("|");
  return `# dirq completion for bash: source <(dirq completion bash)
_dirq() {
  local cur prev sub word i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev=""
  if [ "$COMP_CWORD" -gt 0 ]; then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  case "$prev" in
${unique.join("\n")}
    ${pattern("file")}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    ${pattern("dir")}) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    ${pattern("command")}) COMPREPLY=($(compgen -c -- "$cur")); return ;;
    ${pattern("word")}) COMPREPLY=(); return ;;
  esac
  sub=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$word" in
      ${g.subcommands.join("|")}) sub="$word"; break ;;
    esac
  done
  case "$sub" in
    completion)
      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "${words(g.options.completion)}" -- "$cur"))
      else COMPREPLY=($(compgen -W "${COMPLETION_SHELLS.join(" ")}" -- "$cur")); fi ;;
    init) COMPREPLY=($(compgen -W "${words(g.options.init)}" -- "$cur")) ;;
    server) COMPREPLY=($(compgen -W "${words(g.options.server)}" -- "$cur")) ;;
    query) COMPREPLY=($(compgen -W "${words(g.options.query)}" -- "$cur")) ;;
    repl) COMPREPLY=($(compgen -W "${words(g.options.repl)}" -- "$cur")) ;;
    watch) COMPREPLY=($(compgen -W "${words(g.options.watch)}" -- "$cur")) ;;
    *)
      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "${words(g.options.dirq)}" -- "$cur"))
      elif [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "${g.subcommands.join(" ")}" -- "$cur"))
      else COMPREPLY=(); fi ;;
  esac
}
complete -F _dirq dirq
`;
}

function zshScript(g: Grammar): string {
  // zsh runs bash completion functions through its bashcompinit layer: one script for both.
  return `# dirq completion for zsh: source <(dirq completion zsh)
(( $+functions[compdef] )) || { autoload -U +X compinit && compinit -u }
autoload -U +X bashcompinit && bashcompinit
${bashScript(g).split("\n").slice(1).join("\n")}`;
}

/** A word for fish's command line (single-quoted). */
const fishQuote = (text: string) => `'${text.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;

function fishScript(g: Grammar): string {
  const lines = [
    "# dirq completion for fish: dirq completion fish > ~/.config/fish/completions/dirq.fish",
    "complete -c dirq -e",
    `complete -c dirq -f -n __fish_use_subcommand -a ${fishQuote(g.subcommands.join(" "))}`,
    `complete -c dirq -f -n '__fish_seen_subcommand_from completion' -a ${fishQuote(COMPLETION_SHELLS.join(" "))}`,
  ];
  const conditions: Record<keyof Grammar["options"], string> = {
    dirq: `not __fish_seen_subcommand_from ${g.subcommands.join(" ")}`,
    query: "__fish_seen_subcommand_from query",
    repl: "__fish_seen_subcommand_from repl",
    init: "__fish_seen_subcommand_from init",
    server: "__fish_seen_subcommand_from server",
    watch: "__fish_seen_subcommand_from watch",
    completion: "__fish_seen_subcommand_from completion",
  };
  for (const [topic, specs] of Object.entries(g.options) as [
    keyof Grammar["options"],
    OptionSpec[],
  ][]) {
    for (const spec of specs) {
      const names = spec.flags
        .map((flag) => (flag.startsWith("--") ? `-l ${flag.slice(2)}` : `-s ${flag.slice(1)}`))
        .join(" ");
      const value = spec.value;
      const takes =
        typeof value === "object"
          ? `-x -a ${fishQuote(value.choices.join(" "))}`
          : value === "file"
            ? "-r -F"
            : value === "dir"
              ? `-x -a '(__fish_complete_directories)'`
              : value === "command"
                ? `-x -a '(__fish_complete_command)'`
                : value === "word"
                  ? "-x"
                  : "-f";
      lines.push(`complete -c dirq -n ${fishQuote(conditions[topic])} ${names} ${takes}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** The completion script for a shell, made from the help texts (one source of the options). */
export function completionScript(shell: CompletionShell): string {
  const g = grammar();
  return shell === "bash" ? bashScript(g) : shell === "zsh" ? zshScript(g) : fishScript(g);
}
