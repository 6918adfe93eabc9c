import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { type FakeServer, sendJson, startServer } from "./helpers.js";

/**
 * A fake rustreg: the web API read endpoints, a sparse index, the publish endpoint cargo uses,
 * and the downloads `cargo install` fetches (`/dl/<name>/<version>/download`).
 */
export interface FakeRustreg extends FakeServer {
  published: Map<string, { version: string; authorization: string | undefined }[]>;
  /** The sparse index URL for cargo (`sparse+http://127.0.0.1:<port>/index/`). */
  index: string;
}

interface CratePublishMeta {
  name: string;
  vers: string;
  features?: Record<string, string[]>;
  rust_version?: string | null;
}

function indexPath(name: string): string {
  if (name.length <= 2) return `${name.length}/${name}`;
  if (name.length === 3) return `3/${name[0]}/${name}`;
  return `${name.slice(0, 2)}/${name.slice(2, 4)}/${name}`;
}

/**
 * `existing`: versions already on the registry, by crate. `trusted`: those of them published by
 * trusted publishing, whose version record carries `trustpub_data` as crates.io's does.
 */
export async function startRustreg(
  existing: Record<string, string[]> = {},
  trusted: Record<string, string[]> = {},
): Promise<FakeRustreg> {
  const published = new Map<string, { version: string; authorization: string | undefined }[]>();
  const lines = new Map<string, string[]>();
  const crates = new Map<string, Buffer>();
  const has = (name: string, version: string) =>
    (existing[name] ?? []).includes(version) ||
    (published.get(name) ?? []).some((p) => p.version === version);
  const server = await startServer((request, response, base) => {
    const url = new URL(request.url, base);
    if (url.pathname === "/index/config.json")
      return sendJson(response, 200, { dl: `${base}/dl`, api: base });
    if (url.pathname.startsWith("/index/")) {
      const name = url.pathname.split("/").pop() ?? "";
      const found = lines.get(name);
      if (!found) return sendJson(response, 404, {});
      response.writeHead(200, { "content-type": "text/plain" });
      return void response.end(`${found.join("\n")}\n`);
    }
    const download = /^\/dl\/([^/]+)\/([^/]+)\/download$/.exec(url.pathname);
    if (download) {
      const crate = crates.get(`${download[1]}@${download[2]}`);
      if (!crate) return sendJson(response, 404, {});
      response.writeHead(200, { "content-type": "application/gzip" });
      return void response.end(crate);
    }
    if (request.method === "PUT" && url.pathname === "/api/v1/crates/new") {
      const body = request.body;
      const jsonLength = body.readUInt32LE(0);
      const meta = JSON.parse(
        body.subarray(4, 4 + jsonLength).toString("utf8"),
      ) as CratePublishMeta;
      const crateLength = body.readUInt32LE(4 + jsonLength);
      const crate = body.subarray(8 + jsonLength, 8 + jsonLength + crateLength);
      if (has(meta.name, meta.vers)) {
        return sendJson(response, 400, {
          errors: [{ detail: `crate version \`${meta.vers}\` is already uploaded` }],
        });
      }
      const list = published.get(meta.name) ?? [];
      list.push({ version: meta.vers, authorization: request.headers.authorization });
      published.set(meta.name, list);
      crates.set(`${meta.name}@${meta.vers}`, Buffer.from(crate));
      const cksum = createHash("sha256").update(crate).digest("hex");
      const entry = JSON.stringify({
        name: meta.name,
        vers: meta.vers,
        deps: [],
        cksum,
        features: meta.features ?? {},
        yanked: false,
        ...(meta.rust_version ? { rust_version: meta.rust_version } : {}),
      });
      lines.set(meta.name, [...(lines.get(meta.name) ?? []), entry]);
      return sendJson(response, 200, {
        warnings: { invalid_categories: [], invalid_badges: [], other: [] },
      });
    }
    const crate = /^\/api\/v1\/crates\/([^/]+)$/.exec(url.pathname);
    if (crate && request.method === "GET") {
      const name = crate[1] ?? "";
      const versions = [
        ...(existing[name] ?? []),
        ...(published.get(name) ?? []).map((p) => p.version),
      ].reverse();
      return versions.length > 0
        ? sendJson(response, 200, {
            crate: { name, max_version: versions[0] },
            versions: versions.map((num) => ({ num })),
          })
        : sendJson(response, 404, { errors: [{ detail: "Not Found" }] });
    }
    const read = /^\/api\/v1\/crates\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (read) {
      const [, name = "", version = ""] = read;
      const trustpub = (trusted[name] ?? []).includes(version)
        ? { provider: "github", repository: "acme/widget", run_id: "4242", sha: "abc123" }
        : null;
      return has(name, version)
        ? sendJson(response, 200, {
            version: {
              num: version,
              trustpub_data: trustpub,
              published_by: trustpub ? null : { login: "octocat" },
            },
          })
        : sendJson(response, 404, { errors: [] });
    }
    sendJson(response, 404, {});
  });
  return Object.assign(server, { published, indexPath, index: `sparse+${server.url}/index/` });
}

/** A fake pyreg: JSON API reads, OIDC audience and mint-token, legacy upload; also the host's OIDC token endpoint. */
export interface FakePyreg extends FakeServer {
  uploads: {
    file: string;
    name: string;
    version: string;
    authorization: string | undefined;
    /** Every form field but the file, in order (repeated fields repeat). */
    fields: [string, string][];
    /** The distribution file's bytes, as uploaded. */
    content: Buffer;
  }[];
}

/**
 * `existing`: versions already on the registry, by project. `provenance`: `<project>@<version>`
 * → the trusted publisher whose PEP 740 provenance the integrity API serves for its files.
 */
export async function startPyreg(
  existing: Record<string, string[]> = {},
  provenance: Record<string, { repository: string; workflow: string; environment?: string }> = {},
): Promise<FakePyreg> {
  const uploads: FakePyreg["uploads"] = [];
  const server = await startServer((request, response, base) => {
    const url = new URL(request.url, base);
    const project = /^\/pypi\/([^/]+)\/json$/.exec(url.pathname);
    const versionsOf = (name: string) => [
      ...new Set([
        ...(existing[name] ?? []),
        ...uploads.filter((u) => u.name === name).map((u) => u.version),
      ]),
    ];
    if (project) {
      const name = project[1] ?? "";
      const versions = versionsOf(name);
      return versions.length > 0
        ? sendJson(response, 200, {
            info: { name, version: versions[versions.length - 1] },
            releases: Object.fromEntries(versions.map((v) => [v, []])),
          })
        : sendJson(response, 404, { message: "Not Found" });
    }
    const read = /^\/pypi\/([^/]+)\/([^/]+)\/json$/.exec(url.pathname);
    if (read) {
      const [, name = "", version = ""] = read;
      const files = uploads.filter((u) => u.name === name && u.version === version);
      const known = (existing[name] ?? []).includes(version) || files.length > 0;
      const urls =
        files.length > 0
          ? files.map((u) => ({ filename: u.file }))
          : [{ filename: `${name}-${version}.tar.gz` }];
      return known
        ? sendJson(response, 200, { info: { version }, urls })
        : sendJson(response, 404, { message: "Not Found" });
    }
    const integrity = /^\/integrity\/([^/]+)\/([^/]+)\/([^/]+)\/provenance$/.exec(url.pathname);
    if (integrity) {
      const publisher = provenance[`${integrity[1] ?? ""}@${integrity[2] ?? ""}`];
      return publisher
        ? sendJson(response, 200, {
            version: 1,
            attestation_bundles: [
              { publisher: { kind: "GitHub", ...publisher }, attestations: [{}] },
            ],
          })
        : sendJson(response, 404, { message: "No provenance available" });
    }
    if (url.pathname === "/_/oidc/audience")
      return sendJson(response, 200, { audience: "pyreg-test" });
    if (url.pathname === "/actions-oidc") {
      // The workflow host's token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL).
      if (request.headers.authorization !== "bearer request-token")
        return sendJson(response, 401, {});
      return sendJson(response, 200, {
        value: `jwt-${url.searchParams.get("audience")}-${url.searchParams.get("scenario")}`,
      });
    }
    if (url.pathname === "/_/oidc/mint-token" && request.method === "POST") {
      const { token } = JSON.parse(request.body.toString("utf8")) as { token: string };
      if (token === "jwt-pyreg-test-good")
        return sendJson(response, 200, { success: true, token: "pypi-minted-token" });
      return sendJson(response, 422, {
        message: "Token request failed",
        errors: [
          {
            code: "invalid-publisher",
            description: "valid token, but no corresponding publisher (environment mismatch)",
          },
        ],
      });
    }
    if (url.pathname === "/legacy/" && request.method === "POST") {
      const text = request.body.toString("latin1");
      const field = (name: string) =>
        new RegExp(`name="${name}"\\r\\n\\r\\n([^\\r]*)`).exec(text)?.[1] ?? "";
      const file = /name="content"; filename="([^"]+)"/.exec(text)?.[1] ?? "";
      const authorization = request.headers.authorization;
      if (!authorization?.startsWith("Basic "))
        return sendJson(response, 403, { message: "no auth" });
      if (uploads.some((u) => u.file === file)) {
        response.writeHead(400, { "content-type": "text/plain" });
        return void response.end("400 File already exists.");
      }
      const fields: [string, string][] = [];
      for (const part of text.split(/--[^\r\n]+\r\n/)) {
        const match = /^Content-Disposition: form-data; name="([^"]+)"\r\n\r\n([\s\S]*)\r\n$/.exec(
          part,
        );
        if (match)
          fields.push([match[1] ?? "", Buffer.from(match[2] ?? "", "latin1").toString("utf8")]);
      }
      uploads.push({
        file,
        name: field("name"),
        version: field("version"),
        authorization,
        fields,
        content: uploadedFile(request.body, request.headers["content-type"]),
      });
      response.writeHead(200, { "content-type": "text/plain" });
      return void response.end("OK");
    }
    sendJson(response, 404, {});
  });
  return Object.assign(server, { uploads });
}

/** The bytes of the multipart part named `content` (the distribution file). */
function uploadedFile(body: Buffer, contentType: string | undefined): Buffer {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType ?? "")?.[1];
  if (!boundary) return Buffer.alloc(0);
  const text = body.toString("latin1");
  const header =
    /Content-Disposition: form-data; name="content"; filename="[^"]*"\r\n(?:[^\r\n]+\r\n)*\r\n/.exec(
      text,
    );
  if (!header) return Buffer.alloc(0);
  const start = header.index + header[0].length;
  const end = text.indexOf(`\r\n--${boundary}`, start);
  return Buffer.from(text.slice(start, end < 0 ? undefined : end), "latin1");
}

/** What `npm install` needs of packages this fake did not receive (third-party dependencies). */
export interface JsregOthers {
  /** The packument of `name`, or undefined when there is none (404). */
  packument(name: string): Record<string, unknown> | undefined;
  /** The bytes of a tarball path (`/<name>/-/<file>.tgz`), or undefined (404). */
  tarball(path: string): Promise<Buffer | undefined>;
}

/**
 * A fake jsreg that speaks enough of the npm registry protocol for `npm publish` and for
 * `npm install` of what was published: packuments with each version's manifest and `dist`
 * (tarball URL, integrity), and the tarballs themselves.
 */
export interface FakeJsreg extends FakeServer {
  publishes: { name: string; versions: string[]; authorization: string | undefined }[];
  /** The dist-tags of each package, as publishes set them (`{ next: "0.2.0-rc.1" }`). */
  tags: Map<string, Record<string, string>>;
  /** Published tarballs by URL path (`/dirq/-/dirq-0.1.0.tgz`). */
  tarballs: Map<string, Buffer>;
}

interface PublishBody {
  versions: Record<string, { dist?: { tarball?: string } }>;
  "dist-tags"?: Record<string, string>;
  _attachments?: Record<string, { data: string }>;
}

/** What else the fake does besides the protocol's happy path. */
export interface JsregOptions {
  /** Every publish is refused with this, as the public registry answers some (E404, E403). */
  refusal?: { status: number; error: string };
  /** `<name>@<version>` → the repository whose workflow's provenance attestation it serves. */
  attested?: Record<string, string>;
}

/** A SLSA provenance attestation as npm's attestations endpoint serves it (payload decoded). */
function provenanceAttestation(repository: string): Record<string, unknown> {
  const statement = {
    _type: "https://in-toto.io/Statement/v1",
    predicateType: "https://slsa.dev/provenance/v1",
    predicate: {
      buildDefinition: {
        externalParameters: {
          workflow: {
            repository: `https://github.com/${repository}`,
            path: ".github/workflows/release.yml",
            ref: "refs/tags/v1.0.0",
          },
        },
      },
    },
  };
  return {
    predicateType: "https://slsa.dev/provenance/v1",
    bundle: {
      dsseEnvelope: { payload: Buffer.from(JSON.stringify(statement)).toString("base64") },
    },
  };
}

export async function startJsreg(
  existing: Record<string, string[]> = {},
  others?: JsregOthers,
  options: JsregOptions = {},
): Promise<FakeJsreg> {
  const { refusal, attested = {} } = options;
  const publishes: FakeJsreg["publishes"] = [];
  const manifests = new Map<string, Map<string, unknown>>();
  const tags = new Map<string, Record<string, string>>();
  const tarballs = new Map<string, Buffer>();
  const server = await startServer((request, response, base) => {
    const path = decodeURIComponent(new URL(request.url, base).pathname);
    const name = path.slice(1);
    const attestation = /^\/-\/npm\/v1\/attestations\/(.+)$/.exec(path);
    if (request.method === "GET" && attestation) {
      const repository = attested[attestation[1] ?? ""];
      return repository
        ? sendJson(response, 200, { attestations: [provenanceAttestation(repository)] })
        : sendJson(response, 404, { error: "not found" });
    }
    if (request.method === "GET" && path.includes("/-/")) {
      const own = tarballs.get(path);
      if (own) {
        response.writeHead(200, { "content-type": "application/octet-stream" });
        return void response.end(own);
      }
      void (others?.tarball(path) ?? Promise.resolve(undefined)).then((bytes) => {
        if (!bytes) return sendJson(response, 404, { error: "not found" });
        response.writeHead(200, { "content-type": "application/octet-stream" });
        response.end(bytes);
      });
      return;
    }
    if (request.method === "GET") {
      const versions: Record<string, unknown> = Object.fromEntries(
        (existing[name] ?? []).map((v) => [v, { name, version: v }]),
      );
      for (const [version, manifest] of manifests.get(name) ?? []) versions[version] = manifest;
      if (Object.keys(versions).length > 0) {
        return sendJson(response, 200, { name, "dist-tags": tags.get(name) ?? {}, versions });
      }
      const other = others?.packument(name);
      return other
        ? sendJson(response, 200, other)
        : sendJson(response, 404, { error: "not found" });
    }
    if (request.method === "PUT") {
      if (refusal !== undefined)
        return sendJson(response, refusal.status, { error: refusal.error });
      if (request.headers.authorization !== "Bearer js-token-value")
        return sendJson(response, 401, { error: "unauthorized" });
      const body = JSON.parse(request.body.toString("utf8")) as PublishBody;
      const known = manifests.get(name) ?? new Map<string, unknown>();
      const clash = Object.keys(body.versions).find(
        (version) => known.has(version) || (existing[name] ?? []).includes(version),
      );
      if (clash) {
        return sendJson(response, 403, {
          error: `You cannot publish over the previously published versions: ${clash}.`,
        });
      }
      const attachments = Object.values(body._attachments ?? {});
      for (const [version, manifest] of Object.entries(body.versions)) {
        known.set(version, manifest);
        const tarball = manifest.dist?.tarball;
        const attachment = attachments.shift();
        if (tarball && attachment) {
          tarballs.set(new URL(tarball).pathname, Buffer.from(attachment.data, "base64"));
        }
      }
      manifests.set(name, known);
      tags.set(name, { ...tags.get(name), ...body["dist-tags"] });
      publishes.push({
        name,
        versions: Object.keys(body.versions),
        authorization: request.headers.authorization,
      });
      return sendJson(response, 201, { ok: true });
    }
    sendJson(response, 404, {});
  });
  return Object.assign(server, { publishes, tarballs, tags });
}

/** What the three fakes start with: versions on each, and their public provenance. */
export interface RegistrySeed {
  rust?: Record<string, string[]>;
  /** Crate versions published by trusted publishing (`trustpub_data`). */
  trusted?: Record<string, string[]>;
  py?: Record<string, string[]>;
  provenance?: Record<string, { repository: string; workflow: string; environment?: string }>;
  js?: Record<string, string[]>;
  attested?: Record<string, string>;
}

/**
 * The three fakes on loopback, and the environment that points pubtool (and cargo) at them;
 * `close` stops all three.
 */
export async function startRegistries(seed: RegistrySeed = {}) {
  const [rustreg, pyreg, jsreg] = await Promise.all([
    startRustreg(seed.rust, seed.trusted),
    startPyreg(seed.py, seed.provenance),
    startJsreg(seed.js, undefined, { attested: seed.attested }),
  ]);
  const env = {
    PUBTOOL_RUSTREG_URL: rustreg.url,
    PUBTOOL_RUSTREG_INDEX: rustreg.index,
    PUBTOOL_PYREG_URL: pyreg.url,
    PUBTOOL_JSREG_URL: jsreg.url,
    CARGO_HOME: process.env.CARGO_HOME ?? join(homedir(), ".cargo"),
    RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(homedir(), ".rustup"),
  };
  const close = async () => {
    await Promise.all([rustreg.close(), pyreg.close(), jsreg.close()]);
  };
  return { rustreg, pyreg, jsreg, env, close };
}
