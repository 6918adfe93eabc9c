import type { RegistryKind } from "../config/schema.js";
import { envValue } from "../endpoints.js";

/** How a package will authenticate: OIDC, a fallback token variable, or not at all. */
export type AuthMode =
  | { mode: "oidc"; detail: string }
  | { mode: "token"; variable: string; detail: string }
  | { mode: "none"; detail: string };

/**
 * True inside a workflow run whose job has `id-token: write`: the host only sets
 * `ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN` then.
 */
export function oidcAvailable(env: NodeJS.ProcessEnv): boolean {
  return (
    envValue(env, "ACTIONS_ID_TOKEN_REQUEST_URL") !== undefined &&
    envValue(env, "ACTIONS_ID_TOKEN_REQUEST_TOKEN") !== undefined
  );
}

/** The spec's token rules: OIDC wins for pyreg and jsreg; rustreg uses RUST_REGISTRY_TOKEN. */
export function authModeFor(kind: RegistryKind, env: NodeJS.ProcessEnv): AuthMode {
  const oidc = oidcAvailable(env);
  if (kind === "rustreg") {
    if (envValue(env, "RUST_REGISTRY_TOKEN") !== undefined) {
      return {
        mode: "token",
        variable: "RUST_REGISTRY_TOKEN",
        detail:
          "RUST_REGISTRY_TOKEN (set by the registry's auth action under OIDC, or a long-lived token)",
      };
    }
    return {
      mode: "none",
      detail: oidc
        ? "RUST_REGISTRY_TOKEN is not set: run the registry's authentication action (v1) before pubtool publish to exchange the OIDC token"
        : "RUST_REGISTRY_TOKEN is not set and no OIDC token can be requested (needs id-token: write in a workflow run)",
    };
  }
  if (oidc)
    return {
      mode: "oidc",
      detail: "OIDC trusted publishing (ACTIONS_ID_TOKEN_REQUEST_URL present)",
    };
  const names = kind === "pyreg" ? ["PYREG_API_TOKEN"] : ["JSREG_AUTH_TOKEN", "JSREG_TOKEN"];
  const variable = names.find((name) => envValue(env, name) !== undefined);
  if (variable) return { mode: "token", variable, detail: `${variable} (fallback token)` };
  return {
    mode: "none",
    detail: `no OIDC token can be requested (needs id-token: write in a workflow run) and ${names.join(" / ")} is not set`,
  };
}
