import js from "@eslint/js";
import { fileURLToPath } from "node:url";
import tseslint from "typescript-eslint";
import dirqLayers from "./eslint-rules/dirq-layers.js";

/**
 * dirq's core from the bottom up: each folder of packages/dirq/src (or file at its top) with
 * the layer it is in. A module loads at run time only from its own layer and those below
 * (`import type` is free); read off the import graph, documented in docs/internals.md.
 */
const DIRQ_LAYERS = [
  // Leaves: errors, lazily loaded built-ins, the package's own files, small shared helpers.
  [
    "shared",
    "errors.ts",
    "lazy-module.ts",
    "node-options.ts",
    "package-files.ts",
    "version.ts",
    "child-start.ts",
    "make-folder.ts",
    "cache-folder.ts",
    "native-library.ts",
  ],
  ["progress"],
  // The walker, ignore rules and globs: a library of its own, with no SQLite.
  ["scan"],
  ["parse", "watch"],
  ["extensions", "functions"],
  ["output"],
  ["connection"],
  ["query"],
  ["config"],
  ["indexer"],
  ["engine.ts"],
  ["runner", "reaper"],
  ["live"],
  // The clients (their own rule, below, limits them to the documented internal API).
  ["cli", "server", "repl", "watch-command", "sdk", "sdk-stdio", "index.ts"],
  ["launcher"],
];
const DIRQ_SRC = fileURLToPath(new URL("packages/dirq/src", import.meta.url));
/** The units up to scan/: none of them may load SQLite, so a walk never does. */
const WITHOUT_SQLITE = DIRQ_LAYERS.slice(
  0,
  DIRQ_LAYERS.findIndex((units) => units.includes("scan")) + 1,
).flat();

export default tseslint.config(
  { ignores: ["**/node_modules/", "**/dist/", "**/test-output/", ".bench/", ".cache/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        Buffer: "readonly",
        URL: "readonly",
        performance: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "no-control-regex": "off",
    },
  },
  {
    // dirq's clients (the CLI, the server, the REPL, the SDK) use the core through its
    // documented internal API only (packages/dirq/docs/internals.md): the engine, the live
    // session, config, extensions, output, progress, the parse seam
    // and the row-change format. Types may come from anywhere.
    files: ["packages/dirq/src/{cli,server,repl,watch-command,sdk,sdk-stdio}/**/*.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: [
                "../indexer/*",
                "!../indexer/row-changes.js",
                "../scan/*",
                "../query/*",
                "../connection/*",
                "../functions/*",
                "../watch/*",
                "../shared/*",
                "!../shared/frame-cutter.js",
                "../runner/*",
                "../reaper/*",
                "../cli/*",
                "../server/*",
                "../repl/*",
                "../sdk/*",
              ],
              allowTypeImports: true,
              message:
                "a client of dirq's core imports only the package entry or the documented internal API (docs/internals.md)",
            },
          ],
        },
      ],
    },
  },
  {
    // The same rule for `import()`, which no-restricted-imports does not see. The CLI is the one
    // client that loads others: it dispatches to the server, the REPL and the stdio SDK by their
    // entry modules, and starts (and stops) worker functions before a statement runs.
    files: ["packages/dirq/src/{cli,server,repl,watch-command,sdk,sdk-stdio}/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector:
            "ImportExpression[source.value=/^\\.\\.\\x2F(indexer\\x2F(?!row-changes\\.js)|scan\\x2F|query\\x2F|connection\\x2F|functions\\x2F(?!prestart\\.js|worker-process\\.js)|watch\\x2F|shared\\x2F(?!frame-cutter\\.js)|runner\\x2F|reaper\\x2F|cli\\x2F|server\\x2F(?!run-server\\.js)|repl\\x2F(?!run-repl\\.js)|sdk\\x2F|sdk-stdio\\x2F(?!run-sdk-stdio\\.js))/]",
          message:
            "a client of dirq's core imports only the package entry or the documented internal API (docs/internals.md), import() included",
        },
      ],
    },
  },
  {
    // The layering of dirq's core, static imports and import() alike.
    files: ["packages/dirq/src/**/*.ts"],
    plugins: { dirq: dirqLayers },
    rules: {
      "dirq/no-upward-import": ["error", { root: DIRQ_SRC, layers: DIRQ_LAYERS, allow: [] }],
    },
  },
  {
    // scan/ works without SQLite (a walker library, as ripgrep's ignore crate is): neither it nor
    // anything below it loads the binding, by import, import(), require() or lazyModule().
    files: WITHOUT_SQLITE.map((unit) =>
      unit.endsWith(".ts") ? `packages/dirq/src/${unit}` : `packages/dirq/src/${unit}/**/*.ts`,
    ),
    plugins: { dirq: dirqLayers },
    rules: {
      "dirq/no-module": [
        "error",
        {
          modules: ["@rocicorp/zero-sqlite3"],
          why: "scan/ and the layers below it work without SQLite (docs/internals.md)",
        },
      ],
    },
  },
  {
    // CommonJS on purpose (bin/dirq.cjs: start-up, see packages/dirq/scripts/build-cli.mjs).
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", __dirname: "readonly", __filename: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
