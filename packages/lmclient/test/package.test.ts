import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type FakeServer, startFakeServer } from "./support.js";

const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));
const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

let server: FakeServer;

before(async () => {
  server = await startFakeServer();
});

after(async () => {
  await server.close();
});

/** Runs an ES module snippet with plain `node` (no loader, no flags) from the repo root. */
function runNode(source: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", source], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 20_000,
    env: { ...process.env, NODE_OPTIONS: "", ...env },
  });
  assert.equal(result.error, undefined);
  assert.equal(result.status, 0, `node failed: ${result.stderr}`);
  return result.stdout;
}

describe("package", () => {
  it('exports CompatLM and BaseLM from "lmclient" at the repo root', () => {
    const out = runNode(
      'import { CompatLM, BaseLM } from "lmclient";' +
        "console.log(typeof CompatLM, typeof BaseLM, new CompatLM({ model: 'm' }) instanceof BaseLM);",
    );
    assert.equal(out.trim(), "function function true");
  });

  it("forward works under plain node from the compiled worker, and the process exits", () => {
    const out = runNode(
      'import { CompatLM } from "lmclient";' +
        "const lm = new CompatLM({ model: 'plain-node', base_url: process.env.BASE_URL });" +
        "const r = lm.forward('from plain node');" +
        "const flags = process.execArgv.filter((a) => a.startsWith('-') && a !== '--input-type=module' && a !== '-e');" +
        "console.log(JSON.stringify({ content: r.choices[0].message.content, flags }));",
      { BASE_URL: server.baseUrl },
    );
    assert.deepEqual(JSON.parse(out), { content: "echo: from plain node", flags: [] });
  });

  it("ships an ESM and a CommonJS entry, and the worker inlined as a string", () => {
    assert.ok(existsSync(`${PACKAGE_DIR}dist/src/worker-source.js`));
    assert.ok(existsSync(`${PACKAGE_DIR}dist/cjs/index.cjs`));
    const manifest = JSON.parse(readFileSync(`${PACKAGE_DIR}package.json`, "utf8")) as {
      exports: Record<string, Record<string, { default: string }>>;
      files: string[];
    };
    assert.equal(manifest.exports["."]?.import?.default, "./dist/src/index.js");
    assert.equal(manifest.exports["."]?.require?.default, "./dist/cjs/index.cjs");
    assert.ok(manifest.files.includes("dist/src") && manifest.files.includes("dist/cjs"));
  });

  it("declares nothing it bundles, and its tarball ships licenses but no source maps", () => {
    const manifest = JSON.parse(readFileSync(`${PACKAGE_DIR}package.json`, "utf8")) as {
      dependencies?: Record<string, string>;
    };
    assert.deepEqual(Object.keys(manifest.dependencies ?? {}), []);
    const packed = spawnSync("npm", ["pack", "--dry-run", "--json", "--loglevel=error"], {
      cwd: PACKAGE_DIR,
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(packed.status, 0, packed.stderr);
    const [entry] = JSON.parse(packed.stdout) as { files: { path: string }[] }[];
    const files = entry?.files.map((file) => file.path) ?? [];
    assert.ok(files.includes("LICENSE"), files.join(" "));
    // The worker's code once: both entries load dist/src/worker-source.cjs.
    const worker = readFileSync(`${PACKAGE_DIR}dist/src/worker-source.cjs`, "utf8");
    const marker = worker.slice(worker.indexOf("WORKER_SOURCE = ") + 16).slice(0, 200);
    const holders = files.filter(
      (path) =>
        /\.(c?js)$/.test(path) && readFileSync(`${PACKAGE_DIR}${path}`, "utf8").includes(marker),
    );
    assert.deepEqual(holders, ["dist/src/worker-source.cjs"]);
    assert.ok(files.includes("dist/THIRD-PARTY-LICENSES.txt"), files.join(" "));
    assert.deepEqual(
      files.filter(
        (path) => path.endsWith(".map") || /transport|http-attempt|http-stack/.test(path),
      ),
      [],
      "no source maps, and the worker's modules only inside dist/src/worker-source.cjs",
    );
    const licenses = readFileSync(`${PACKAGE_DIR}dist/THIRD-PARTY-LICENSES.txt`, "utf8");
    assert.match(licenses, /^openai \S+ \(Apache-2\.0\)$/m);
    assert.match(licenses, /^undici \S+ \(MIT\)$/m);
  });
});
