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
  return PREFIXES.find((entry) => upper.startsWith(entry.prefix))?.registry ?? null;
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
