import type { RegistryKind } from "../config/schema.js";

/** The fallback variables the spec names, with what each is for. */
export const FALLBACK_VARIABLES: readonly {
  name: string;
  registry: RegistryKind;
  purpose: string;
}[] = [
  { name: "RUST_REGISTRY_TOKEN", registry: "rustreg", purpose: "publish fallback" },
  { name: "RUSTREG_DOCTOR_TOKEN", registry: "rustreg", purpose: "doctor read token" },
  { name: "PYREG_API_TOKEN", registry: "pyreg", purpose: "publish fallback" },
  { name: "JSREG_AUTH_TOKEN", registry: "jsreg", purpose: "publish fallback" },
  { name: "JSREG_TOKEN", registry: "jsreg", purpose: "publish fallback (alternative name)" },
];

/** A variable a registry's own tool reads a credential from: a name, or a pattern of names. */
export interface ToolVariable {
  name: string | RegExp;
  registry: RegistryKind;
  purpose: string;
}

/** The tool variables of one registry. */
type ToolVariables = readonly Omit<ToolVariable, "registry">[];

/** The tool variables, by the registry whose tools read them. */
const TOOL_VARIABLES_BY_REGISTRY: Record<RegistryKind, ToolVariables> = {
  rustreg: [
    { name: "CARGO_REGISTRY_TOKEN", purpose: "read by cargo publish" },
    { name: /^CARGO_REGISTRIES_[A-Z0-9_]+_TOKEN$/i, purpose: "read by cargo for a named registry" },
  ],
  pyreg: [
    { name: "TWINE_PASSWORD", purpose: "read by twine upload" },
    { name: "UV_PUBLISH_TOKEN", purpose: "read by uv publish" },
    { name: "UV_PUBLISH_PASSWORD", purpose: "read by uv publish" },
    { name: /^POETRY_PYPI_TOKEN_[A-Z0-9_]+$/i, purpose: "read by poetry publish" },
    { name: /^POETRY_HTTP_BASIC_[A-Z0-9_]+_PASSWORD$/i, purpose: "read by poetry publish" },
    { name: "FLIT_PASSWORD", purpose: "read by flit publish" },
    { name: "HATCH_INDEX_AUTH", purpose: "read by hatch publish" },
    { name: "PDM_PUBLISH_PASSWORD", purpose: "read by pdm publish" },
  ],
  jsreg: [
    { name: "NODE_AUTH_TOKEN", purpose: "read through the npmrc setup-node writes" },
    { name: "NPM_TOKEN", purpose: "conventionally referenced from .npmrc" },
    { name: /^NPM_CONFIG_(?:_AUTH|_AUTHTOKEN|TOKEN)$/i, purpose: "read by npm as config" },
    { name: /^npm_config_\/\/.*:_auth(?:Token)?$/i, purpose: "read by npm as config" },
    { name: "YARN_NPM_AUTH_TOKEN", purpose: "read by yarn npm publish" },
  ],
};

/** Variables the registries' own tools read a credential from (names, or patterns of names). */
export const TOOL_VARIABLES: readonly ToolVariable[] = (
  Object.keys(TOOL_VARIABLES_BY_REGISTRY) as RegistryKind[]
).flatMap((registry) =>
  TOOL_VARIABLES_BY_REGISTRY[registry].map((variable) => ({ ...variable, registry })),
);

/** The tool variable entry `name` matches, if any. */
export function toolVariable(name: string): ToolVariable | undefined {
  return TOOL_VARIABLES.find((variable) =>
    typeof variable.name === "string" ? variable.name === name : variable.name.test(name),
  );
}

/** Words in a secret's name that tie it to a registry (`CARGO_RELEASE_TOKEN`, `PROD_PYPI_KEY`). */
const REGISTRY_WORDS: readonly { words: string[]; registry: RegistryKind }[] = [
  { words: ["CARGO", "CRATES", "CRATESIO", "RUSTREG"], registry: "rustreg" },
  { words: ["PYPI", "TESTPYPI", "PYREG", "TWINE", "POETRY", "FLIT", "HATCH"], registry: "pyreg" },
  { words: ["NPM", "NPMJS", "JSREG", "YARN"], registry: "jsreg" },
];

/** Words that make a name a credential rather than, say, a version or a path. */
const CREDENTIAL_WORDS = [
  "TOKEN",
  "TOKENS",
  "KEY",
  "PASSWORD",
  "PASS",
  "PWD",
  "AUTH",
  "SECRET",
  "API",
];

/** Registry-specific prefixes of secret names that look like registry credentials. */
const PREFIXES: readonly { prefix: string; registry: RegistryKind }[] = [
  { prefix: "RUSTREG_", registry: "rustreg" },
  { prefix: "RUST_REGISTRY_", registry: "rustreg" },
  { prefix: "CARGO_REGISTRY_", registry: "rustreg" },
  { prefix: "CARGO_REGISTRIES_", registry: "rustreg" },
  { prefix: "CRATES_IO_", registry: "rustreg" },
  { prefix: "PYREG_", registry: "pyreg" },
  { prefix: "PYPI_", registry: "pyreg" },
  { prefix: "TWINE_", registry: "pyreg" },
  { prefix: "JSREG_", registry: "jsreg" },
  { prefix: "NPM_", registry: "jsreg" },
  { prefix: "NODE_AUTH_", registry: "jsreg" },
];

/** The registry a secret name belongs to, `null` when it does not look like a credential. */
export function registryOfSecret(name: string): RegistryKind | null {
  const upper = name.toUpperCase();
  const exact = FALLBACK_VARIABLES.find((variable) => variable.name === upper);
  if (exact) return exact.registry;
  const tool = toolVariable(name);
  if (tool) return tool.registry;
  const prefixed = PREFIXES.find((entry) => upper.startsWith(entry.prefix))?.registry;
  if (prefixed) return prefixed;
  const words = upper.split(/[^A-Z0-9]+/);
  if (!words.some((word) => CREDENTIAL_WORDS.includes(word))) return null;
  return (
    REGISTRY_WORDS.find((entry) => entry.words.some((word) => words.includes(word)))?.registry ??
    null
  );
}

/** A description of a token value that reveals only its length and a well-known prefix type. */
export function describeValue(value: string): string {
  const kinds: [RegExp, string][] = [
    [/^cio/, "rustreg API token format (cio prefix)"],
    [/^pypi-/, "pyreg API token format (pypi- prefix)"],
    [/^npm_/, "jsreg granular/automation token format (npm_ prefix)"],
    [/^gh[pousr]_/, "workflow-host token format (gh*_ prefix); not a registry token"],
  ];
  const kind = kinds.find(([pattern]) => pattern.test(value))?.[1];
  return `set, ${value.length} chars${kind ? `, ${kind}` : ""}`;
}
