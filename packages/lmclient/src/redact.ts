/** Replacement text for a secret. */
export const REDACTED = "[redacted]";

const SECRET_KEY = /^(?:api[_-]?key|x-api-key|api-key|authorization|proxy-authorization)$/i;

/**
 * Whether a request-argument name holds a secret: anything starting with `api_` (DSPy's rule),
 * `apiKey`, and the usual credential header names.
 */
export function isSecretKey(key: string): boolean {
  return key.startsWith("api_") || SECRET_KEY.test(key);
}

/** A deep copy of `value` without secret-named keys, at any depth. */
export function withoutSecrets<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => withoutSecrets(item)) as T;
  if (value !== null && typeof value === "object" && isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (!isSecretKey(key)) out[key] = withoutSecrets(item);
    }
    return out as T;
  }
  return value;
}

/**
 * `text` with every occurrence of `secret` replaced. Secrets shorter than 8 characters are not
 * real credentials (placeholders such as `ollama`) and are left alone.
 */
export function redactSecret(text: string, secret: string | undefined): string {
  if (!secret || secret.length < 8) return text;
  return text.split(secret).join(REDACTED);
}

/** A URL without user name and password, for messages. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
