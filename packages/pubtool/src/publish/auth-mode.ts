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

/** The rustreg token variables pubtool reads, in order of precedence. */
export const RUSTREG_TOKEN_VARIABLES = ["RUST_REGISTRY_TOKEN", "CARGO_REGISTRY_TOKEN"] as const;

/** The spec's token rules: OIDC wins for pyreg and jsreg; rustreg uses RUST_REGISTRY_TOKEN. */
export function authModeFor(kind: RegistryKind, env: NodeJS.ProcessEnv): AuthMode {
  const oidc = oidcAvailable(env);
  if (kind === "rustreg") {
    // RUST_REGISTRY_TOKEN first (the spec's variable), then CARGO_REGISTRY_TOKEN, the variable
    // cargo itself reads and the one the registry's auth action README wires its output to.
    const variable = RUSTREG_TOKEN_VARIABLES.find((name) => envValue(env, name) !== undefined);
    if (variable !== undefined) {
      const other = RUSTREG_TOKEN_VARIABLES.find(
        (name) => name !== variable && envValue(env, name) !== undefined,
      );
      const ignored = other === undefined ? "" : `; ${other} is also set and ignored`;
      return {
        mode: "token",
        variable,
        detail: `${variable} (set by the registry's auth action under OIDC, or a long-lived token)${ignored}`,
      };
    }
    return {
      mode: "none",
      detail: oidc
        ? "neither RUST_REGISTRY_TOKEN nor CARGO_REGISTRY_TOKEN is set: run the registry's authentication action (v1) before pubtool publish and pass its token output as RUST_REGISTRY_TOKEN"
        : "neither RUST_REGISTRY_TOKEN nor CARGO_REGISTRY_TOKEN is set, and no OIDC token can be requested (needs id-token: write in a workflow run)",
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

/** How a package's first publish (no version on the registry yet) authenticates. */
export interface FirstPublish {
  auth: AuthMode;
  /** Explains what differs for a first publish; `problem` true when it cannot work as set up. */
  message: string;
  problem: boolean;
}

/**
 * Trusted publishing cannot create a package on every registry: rustreg needs the crate to exist
 * (its auth action has nothing to mint for), jsreg needs one version published with a token,
 * pyreg accepts a pending publisher. For jsreg the fallback token is used when one is set.
 */
export function firstPublishAuth(kind: RegistryKind, env: NodeJS.ProcessEnv): FirstPublish {
  const auth = authModeFor(kind, env);
  if (kind === "rustreg") {
    const message =
      "the crate is not on rustreg yet, and trusted publishing only works for an existing crate (the registry's auth action cannot mint a token for it). Publish this version with a long-lived API token in RUST_REGISTRY_TOKEN (or CARGO_REGISTRY_TOKEN), then register the trusted publisher and delete the token";
    return { auth, message, problem: auth.mode === "none" };
  }
  if (kind === "pyreg") {
    if (auth.mode !== "oidc")
      return { auth, message: "the project is not on pyreg yet", problem: false };
    // As for jsreg: a token that is set is the sure way for a first upload; OIDC only works
    // with a pending publisher, which pubtool cannot see.
    if (envValue(env, "PYREG_API_TOKEN") !== undefined) {
      return {
        auth: {
          mode: "token",
          variable: "PYREG_API_TOKEN",
          detail: "PYREG_API_TOKEN (fallback token, first publish)",
        },
        message:
          "the project is not on pyreg yet, so this first version is published with PYREG_API_TOKEN (OIDC would need a pending publisher); afterwards register the trusted publisher and delete the token",
        problem: false,
      };
    }
    return {
      auth,
      message:
        "the project is not on pyreg yet; OIDC works only if a pending publisher was registered for this project name, otherwise set PYREG_API_TOKEN for this first publish",
      problem: false,
    };
  }
  if (auth.mode !== "oidc") {
    return { auth, message: "the package is not on jsreg yet", problem: false };
  }
  const variable = ["JSREG_AUTH_TOKEN", "JSREG_TOKEN"].find((name) => envValue(env, name));
  if (variable !== undefined) {
    return {
      auth: { mode: "token", variable, detail: `${variable} (fallback token, first publish)` },
      message: `jsreg trusted publishing needs an existing package, so this first version is published with ${variable}; afterwards register the trusted publisher and delete the token`,
      problem: false,
    };
  }
  return {
    auth: { mode: "none", detail: "no token for the first publish" },
    message:
      "the package is not on jsreg yet, and jsreg trusted publishing needs at least one version published with a token. Set JSREG_AUTH_TOKEN (a granular token) for this first publish, then register the trusted publisher and delete the token",
    problem: true,
  };
}
