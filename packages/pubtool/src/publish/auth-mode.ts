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
      "the crate is not on rustreg yet, and trusted publishing only works for an existing crate (the registry's auth action cannot mint a token for it). Publish this version with a long-lived API token in RUST_REGISTRY_TOKEN, then register the trusted publisher and delete the token";
    return { auth, message, problem: auth.mode === "none" };
  }
  if (kind === "pyreg") {
    return {
      auth,
      message:
        auth.mode === "oidc"
          ? "the project is not on pyreg yet; OIDC works only if a pending publisher was registered for this project name, otherwise set PYREG_API_TOKEN"
          : "the project is not on pyreg yet",
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
