import { RUSTREG_TOKEN_VARIABLES } from "../publish/auth-mode.js";

/** The registry's authentication action (`rust-lang/crates-io-auth-action@v1`). */
const AUTH_ACTION = /^rust-lang\/crates-io-auth-action@\S+$/;

/** How the auth action's `token` output reaches a publishing step. */
export interface RustregTokenWiring {
  /** The auth step's `id`, `null` when it has none (its output cannot be referenced then). */
  authStepId: string | null;
  /** Variables of the publishing step that hold the auth action's token output. */
  wiredAs: string[];
  /** The variables pubtool reads, in its order of precedence, and what the step sets them to. */
  read: { name: string; value: string }[];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Finds the registry's auth action among the steps before the publishing step and which of the
 * publishing step's variables carry its token output; `null` when the job does not use it.
 */
export function rustregTokenWiring(
  stepsBefore: readonly unknown[],
  variables: Readonly<Record<string, string>>,
): RustregTokenWiring | null {
  const auth = [...stepsBefore]
    .reverse()
    .find(
      (step) =>
        step !== null &&
        typeof step === "object" &&
        typeof (step as Record<string, unknown>).uses === "string" &&
        AUTH_ACTION.test(String((step as Record<string, unknown>).uses).trim()),
    ) as Record<string, unknown> | undefined;
  if (auth === undefined) return null;
  const id = typeof auth.id === "string" && auth.id.trim() !== "" ? auth.id.trim() : null;
  const output =
    id === null
      ? null
      : new RegExp(
          `steps\\s*(?:\\.\\s*${escapeRegExp(id)}|\\[\\s*['"]${escapeRegExp(id)}['"]\\s*\\])\\s*\\.\\s*outputs\\s*\\.\\s*token\\b`,
        );
  const wiredAs =
    output === null
      ? []
      : Object.entries(variables)
          .filter(([, value]) => output.test(value))
          .map(([name]) => name);
  const read = RUSTREG_TOKEN_VARIABLES.filter((name) => (variables[name] ?? "") !== "").map(
    (name) => ({ name, value: variables[name] ?? "" }),
  );
  return { authStepId: id, wiredAs, read };
}
