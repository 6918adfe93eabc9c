import { spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { SecretMasker } from "./secret-mask.js";

/** Variables every subprocess may see: locating programs, home, temp dir, locale, proxies. */
const BASE = [
  "PATH",
  "HOME",
  "USERPROFILE",
  "SystemRoot",
  "TMPDIR",
  "TEMP",
  "TMP",
  "LANG",
  "LC_ALL",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "SSL_CERT_FILE",
  "NODE_EXTRA_CA_CERTS",
];

/** A minimal environment: the base variables plus `names` copied from `env`, plus `extra`. */
export function childEnv(
  env: NodeJS.ProcessEnv,
  names: readonly (string | RegExp)[],
  extra: Record<string, string> = {},
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const wanted =
      BASE.includes(key) ||
      names.some((name) => (typeof name === "string" ? name === key : name.test(key)));
    if (wanted) result[key] = value;
  }
  return { ...result, ...extra };
}

/** Indents every line of a stream by four spaces, also when lines arrive in pieces. */
function indenter(): (text: string) => string {
  let atLineStart = true;
  return (text) => {
    let out = "";
    for (const char of text) {
      if (atLineStart && char !== "\n") out += "    ";
      out += char;
      atLineStart = char === "\n";
    }
    return out;
  };
}

/**
 * Runs a program; its stdout and stderr go to `log` with every secret value masked (each stream
 * through its own `SecretMasker`, so a secret split across writes is still masked).
 * Resolves with the exit code and the output's tail.
 */
export function runProgram(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; log: Writable; secrets: readonly string[] },
): Promise<{ code: number; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let tail = "";
    const indent = indenter();
    const emit = (text: string) => {
      if (text === "") return;
      tail = (tail + text).slice(-2000);
      options.log.write(indent(text));
    };
    const streams = [child.stdout, child.stderr].map((stream) => {
      const masker = new SecretMasker(options.secrets);
      stream.on("data", (chunk: Buffer) => emit(masker.write(chunk)));
      return new Promise<void>((done) =>
        stream.on("close", () => {
          emit(masker.end());
          done();
        }),
      );
    });
    child.on("error", (error) => resolve({ code: 127, tail: `${command}: ${error.message}` }));
    child.on("close", (code) => {
      void Promise.all(streams).then(() => resolve({ code: code ?? 1, tail }));
    });
  });
}
