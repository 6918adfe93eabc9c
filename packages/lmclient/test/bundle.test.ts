/**
 * lmclient inside applications as users build them: bundled with esbuild (ESM and CommonJS),
 * required from CommonJS, run with plain `node` from a folder that has no node_modules.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { type FakeServer, startFakeServer } from "./support.js";

const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

let server: FakeServer;
let dir: string;

before(async () => {
  server = await startFakeServer();
  dir = mkdtempSync(join(tmpdir(), "lmclient-bundle-"));
});

after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Both paths, a typed error from each, and the process ends on its own. */
const APP_BODY = `
const lm = new CompatLM({ model: "bundled", base_url: process.env.BASE_URL, maxRetries: 0 });
const sync = lm.forward("sync").choices[0].message.content;
const asyncText = (await lm.aforward("async")).choices[0].message.content;
const broken = new CompatLM({ model: "m", base_url: "http://127.0.0.1:9/v1", maxRetries: 0 });
let syncError, asyncError;
try { broken.forward("x"); } catch (e) { syncError = e instanceof LMError && e.code; }
try { await broken.aforward("x"); } catch (e) { asyncError = e instanceof LMError && e.code; }
console.log(JSON.stringify({ sync, asyncText, syncError, asyncError }));
`;

const EXPECTED = {
  sync: "echo: sync",
  asyncText: "echo: async",
  syncError: "LM_CONNECTION",
  asyncError: "LM_CONNECTION",
};

function run(file: string, args: string[] = []) {
  const result = spawnSync(process.execPath, [...args, file], {
    cwd: dir,
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: "", NODE_PATH: "", BASE_URL: server.baseUrl },
  });
  assert.equal(result.error, undefined, "the app did not end on its own");
  assert.equal(result.status, 0, `app failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as unknown;
}

async function bundle(entry: string, format: "esm" | "cjs", outfile: string, minify = false) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    minify,
    platform: "node",
    format,
    target: "node20",
    logLevel: "silent",
    nodePaths: [join(REPO_ROOT, "node_modules")],
  });
  // Run it from a folder with nothing else in it: no worker file to find beside the bundle.
  const alone = mkdtempSync(join(dir, "run-"));
  const target = join(alone, outfile.split("/").pop() as string);
  writeFileSync(target, await import("node:fs/promises").then((fs) => fs.readFile(outfile)));
  return target;
}

describe("bundled applications", () => {
  it("an esbuild ESM bundle runs forward and aforward, and exits", async () => {
    const entry = join(dir, "app.mjs");
    writeFileSync(entry, `import { CompatLM, LMError } from "lmclient";\n${APP_BODY}`);
    const out = await bundle(entry, "esm", join(dir, "out-esm.mjs"));
    assert.deepEqual(run(out), EXPECTED);
  });

  it("an esbuild CommonJS bundle runs forward and aforward, and exits", async () => {
    const entry = join(dir, "app-cjs.cjs");
    writeFileSync(
      entry,
      `const { CompatLM, LMError } = require("lmclient");\n(async () => {${APP_BODY}})();`,
    );
    const out = await bundle(entry, "cjs", join(dir, "out-cjs.cjs"));
    assert.deepEqual(run(out), EXPECTED);
  });
});

describe("minified bundles", () => {
  it("keep error names: minifiers rename classes, error.name stays the class's name", async () => {
    const entry = join(dir, "app-min.mjs");
    writeFileSync(
      entry,
      'import { CompatLM, ConnectionError } from "lmclient";\n' +
        'const broken = new CompatLM({ model: "m", base_url: "http://127.0.0.1:9/v1", maxRetries: 0 });\n' +
        "let syncName, asyncName;\n" +
        'try { broken.forward("x"); } catch (e) { syncName = e instanceof ConnectionError && e.name; }\n' +
        'try { await broken.aforward("x"); } catch (e) { asyncName = e.name; }\n' +
        "console.log(JSON.stringify({ syncName, asyncName }));\n",
    );
    const out = await bundle(entry, "esm", join(dir, "out-min.mjs"), true);
    assert.deepEqual(run(out), { syncName: "ConnectionError", asyncName: "ConnectionError" });
  });
});

describe("CommonJS without a bundler", () => {
  it('require("lmclient") loads the CommonJS entry, even without require(esm)', () => {
    const file = join(REPO_ROOT, "packages/lmclient/dist/test/.require-check.cjs");
    writeFileSync(
      file,
      `const { CompatLM, LMError } = require("lmclient");\n` +
        `if (!require.resolve("lmclient").endsWith("index.cjs")) throw new Error("not the CJS entry");\n` +
        `(async () => {${APP_BODY}})();`,
    );
    try {
      // Node 20.11 (the floor) has no require(esm); this flag gives later versions the same limit.
      assert.deepEqual(run(file, ["--no-experimental-require-module"]), EXPECTED);
    } finally {
      rmSync(file, { force: true });
    }
  });
});

describe("TypeScript compiled to CommonJS", () => {
  it("type-checks against the CommonJS types (no skipLibCheck) and runs", () => {
    const project = mkdtempSync(join(dir, "ts-cjs-"));
    mkdirSync(join(project, "node_modules"));
    symlinkSync(
      fileURLToPath(new URL("../../", import.meta.url)),
      join(project, "node_modules/lmclient"),
    );
    writeFileSync(join(project, "package.json"), '{ "type": "commonjs" }');
    writeFileSync(
      join(project, "app.cts"),
      'import { CompatLM, LMError, type LMOutput } from "lmclient";\n' +
        "const outputs: LMOutput[] = [];\n" +
        "const lm = new CompatLM({ model: 'ts-cjs', base_url: process.env.BASE_URL, maxRetries: 0 });\n" +
        "void (async () => {\n" +
        "  const sync = lm.forward('sync').choices[0]?.message?.content;\n" +
        "  const asyncText = (await lm.aforward('async')).choices[0]?.message?.content;\n" +
        "  const broken = new CompatLM({ model: 'm', base_url: 'http://127.0.0.1:9/v1', maxRetries: 0 });\n" +
        "  let syncError, asyncError;\n" +
        "  try { broken.forward('x'); } catch (e) { syncError = e instanceof LMError && e.code; }\n" +
        "  try { await broken.aforward('x'); } catch (e) { asyncError = e instanceof LMError && e.code; }\n" +
        "  console.log(JSON.stringify({ sync, asyncText, syncError, asyncError, n: outputs.length }));\n" +
        "})();\n",
    );
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          skipLibCheck: false,
          outDir: "out",
          types: ["node"],
          typeRoots: [join(REPO_ROOT, "node_modules/@types")],
        },
        files: ["app.cts"],
      }),
    );
    const tsc = spawnSync(
      process.execPath,
      [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", project],
      { encoding: "utf8", timeout: 120_000 },
    );
    assert.equal(tsc.status, 0, `tsc failed: ${tsc.stdout}${tsc.stderr}`);
    assert.deepEqual(run(join(project, "out/app.cjs"), ["--no-experimental-require-module"]), {
      ...EXPECTED,
      n: 0,
    });
  });
});
