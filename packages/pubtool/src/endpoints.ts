/** Base URLs of the services pubtool talks to; each is overridable by an environment variable. */
export interface Endpoints {
  /** Workflow host REST API (`PUBTOOL_GITHUB_API_URL`). */
  githubApi: string;
  /** Workflow host web origin, for the OAuth device flow (`PUBTOOL_GITHUB_URL`). */
  github: string;
  /** rustreg web API (`PUBTOOL_RUSTREG_URL`). */
  rustreg: string;
  /** rustreg sparse index for `cargo publish`, `null` for cargo's default (`PUBTOOL_RUSTREG_INDEX`). */
  rustregIndex: string | null;
  /** pyreg JSON API and OIDC endpoints (`PUBTOOL_PYREG_URL`). */
  pyreg: string;
  /** pyreg upload endpoint (`PUBTOOL_PYREG_UPLOAD_URL`, else `<PUBTOOL_PYREG_URL>/legacy/`). */
  pyregUpload: string;
  /** jsreg registry (`PUBTOOL_JSREG_URL`). */
  jsreg: string;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

/** Reads a variable, treating an empty string as unset. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** The endpoints for `env`. */
export function endpointsFrom(env: NodeJS.ProcessEnv): Endpoints {
  const pyreg = envValue(env, "PUBTOOL_PYREG_URL");
  return {
    githubApi: trimSlash(envValue(env, "PUBTOOL_GITHUB_API_URL") ?? "https://api.github.com"),
    github: trimSlash(envValue(env, "PUBTOOL_GITHUB_URL") ?? "https://github.com"),
    rustreg: trimSlash(envValue(env, "PUBTOOL_RUSTREG_URL") ?? "https://crates.io"),
    rustregIndex: envValue(env, "PUBTOOL_RUSTREG_INDEX") ?? null,
    pyreg: trimSlash(pyreg ?? "https://pypi.org"),
    pyregUpload:
      envValue(env, "PUBTOOL_PYREG_UPLOAD_URL") ??
      (pyreg ? `${trimSlash(pyreg)}/legacy/` : "https://upload.pypi.org/legacy/"),
    jsreg: trimSlash(envValue(env, "PUBTOOL_JSREG_URL") ?? "https://registry.npmjs.org"),
  };
}
