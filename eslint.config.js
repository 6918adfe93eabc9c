import js from "@eslint/js";
import tseslint from "typescript-eslint";

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
    // index, the query runner and reaper, config, extensions, output, progress, the parse seam
    // and the row-change format. Types may come from anywhere.
    files: ["packages/dirq/src/{cli,server,repl,sdk}/**/*.ts"],
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
                "../runner/*",
                "!../runner/query-pool.js",
                "../reaper/*",
                "!../reaper/reaper.js",
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
    // CommonJS on purpose (bin/dirq.cjs: start-up, see packages/dirq/scripts/build-cli.mjs).
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", __dirname: "readonly", __filename: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
