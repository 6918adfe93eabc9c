import { Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** Characters of an unfinished line held back before part of it is let through. */
const MAX_PENDING = 64 * 1024;

/** What a masked secret is printed as. */
export const MASK = "***";

/**
 * Masks secret values in a stream of output chunks. A secret can be split across two writes of
 * the child process, so the masker lets through only complete lines, and of a line longer than
 * 64 KiB all but the last `longest secret - 1` characters, until more output (or the end) shows
 * whether they start a secret. Bytes are decoded
 * with a `StringDecoder`, so a multi-byte character split across chunks is not mangled either.
 */
export class SecretMasker {
  private readonly secrets: string[];
  private readonly holdBack: number;
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";

  constructor(secrets: readonly string[]) {
    // Longest first, so a secret that contains another is masked whole.
    this.secrets = [...new Set(secrets.filter((secret) => secret.length > 0))].sort(
      (a, b) => b.length - a.length,
    );
    this.holdBack = Math.max(0, ...this.secrets.map((secret) => secret.length - 1));
  }

  private mask(text: string): string {
    return this.secrets.reduce((masked, secret) => masked.split(secret).join(MASK), text);
  }

  /** Takes a chunk; returns the text that is safe to print now. */
  write(chunk: Buffer | string): string {
    const text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    const masked = this.mask(this.pending + text);
    // Whole lines go out (a token holds no newline, so a complete line is fully masked) and
    // keep the two streams' lines apart; a very long line goes out minus the hold-back.
    let cut = masked.lastIndexOf("\n") + 1;
    if (masked.length - cut > MAX_PENDING) cut = Math.max(cut, masked.length - this.holdBack);
    this.pending = masked.slice(cut);
    return masked.slice(0, cut);
  }

  /** The end of the stream: returns whatever was held back, masked. */
  end(): string {
    const rest = this.mask(this.pending + this.decoder.end());
    this.pending = "";
    return rest;
  }
}

/** Values shorter than this are not treated as secrets (masking "a" would garble all output). */
const MIN_SECRET_LENGTH = 4;

/** Masks every secret in one complete message (a thrown error's text, a registry's answer). */
export function maskText(text: string, secrets: readonly string[]): string {
  const masker = new SecretMasker(secrets);
  return masker.write(text) + masker.end();
}

/** Variables that hold a credential wherever pubtool runs, by name. */
export const SECRET_VARIABLES = [
  "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
  "ACTIONS_RUNTIME_TOKEN",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "NODE_AUTH_TOKEN",
  "NPM_TOKEN",
  "RUST_REGISTRY_TOKEN",
  "CARGO_REGISTRY_TOKEN",
  "RUSTREG_DOCTOR_TOKEN",
  "PYREG_API_TOKEN",
  "JSREG_AUTH_TOKEN",
  "JSREG_TOKEN",
  "TWINE_PASSWORD",
  "UV_PUBLISH_TOKEN",
  "UV_PUBLISH_PASSWORD",
  "FLIT_PASSWORD",
  "HATCH_INDEX_AUTH",
  "PDM_PUBLISH_PASSWORD",
  "YARN_NPM_AUTH_TOKEN",
];

/** Patterns of further credential variables (cargo's named registries, poetry, npm config). */
const SECRET_VARIABLE_PATTERNS = [
  /^CARGO_REGISTRIES_[A-Z0-9_]+_TOKEN$/i,
  /^POETRY_PYPI_TOKEN_[A-Z0-9_]+$/i,
  /^POETRY_HTTP_BASIC_[A-Z0-9_]+_PASSWORD$/i,
  /^NPM_CONFIG_(?:_AUTH|_AUTHTOKEN|TOKEN)$/i,
  /^npm_config_\/\/.*:_auth(?:Token)?$/i,
];

/**
 * The forms a secret can be echoed in: as is, and inside the HTTP Basic credentials pubtool
 * sends to pyreg (`__token__:<token>`, base64), which a registry may quote back.
 */
export function secretForms(secret: string): string[] {
  if (secret.length < MIN_SECRET_LENGTH) return [];
  return [secret, Buffer.from(`__token__:${secret}`).toString("base64")];
}

/** Every credential value in `env` (and `extra`), in every form it can be echoed in. */
export function knownSecrets(env: NodeJS.ProcessEnv, extra: readonly string[] = []): string[] {
  const values = [...extra];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === "") continue;
    if (
      SECRET_VARIABLES.includes(name) ||
      SECRET_VARIABLE_PATTERNS.some((pattern) => pattern.test(name))
    ) {
      values.push(value);
    }
  }
  return [...new Set(values.flatMap(secretForms))];
}

/**
 * A writer that masks secrets on their way to `target`, chunk-safe (a secret split across two
 * writes is still masked). `flush` lets out what is held back; call it before exiting.
 */
export class MaskingWriter extends Writable {
  private masker: SecretMasker;
  private secrets: string[];

  constructor(
    private readonly target: Writable,
    secrets: readonly string[],
  ) {
    super({ decodeStrings: false });
    this.secrets = [...secrets];
    this.masker = new SecretMasker(this.secrets);
  }

  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    const text = this.masker.write(chunk);
    if (text !== "") this.target.write(text);
    callback();
  }

  /** Writes out whatever is held back (masked). */
  flush(): void {
    const rest = this.masker.end();
    if (rest !== "") this.target.write(rest);
  }
}
