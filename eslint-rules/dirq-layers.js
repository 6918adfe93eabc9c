// ESLint rules of this repository (flat config plugin `dirq`): the layering of dirq's core.
// typescript-eslint's no-restricted-imports sees only static imports and matches specifiers as
// text; these rules resolve each specifier to the folder it names, see `import()` and
// `export ... from` too, and say which layer may not use which.
import { dirname, relative, resolve, sep } from "node:path";

/**
 * The unit of a file under `root`: its first folder (`scan`), or its own name for a file at
 * the top (`engine.ts`); null outside `root`.
 */
function unitOf(root, file) {
  const inside = relative(root, file);
  if (inside === "" || inside.startsWith("..") || resolve(root, inside) !== file) return null;
  const [first, ...rest] = inside.split(sep);
  return rest.length === 0 ? first.replace(/\.js$/, ".ts") : first;
}

/**
 * Whether an import or export loads its module at run time. `import type` and `export type` are
 * erased; under verbatimModuleSyntax, `import { type A } from "x"` still loads `x`.
 */
function loadsValues(node) {
  return node.importKind !== "type" && node.exportKind !== "type";
}

/**
 * Calls `check(node, specifier)` for every module a file loads at run time by a literal name:
 * `import`, `export ... from`, `import()`, and (with `calls`) `require("x")` and the like.
 */
function moduleVisitors(check, calls = []) {
  const declaration = (node) => {
    if (node.source && typeof node.source.value === "string" && loadsValues(node)) {
      check(node.source, node.source.value);
    }
  };
  return {
    ImportDeclaration: declaration,
    ExportNamedDeclaration: declaration,
    ExportAllDeclaration: declaration,
    ImportExpression(node) {
      if (node.source.type === "Literal" && typeof node.source.value === "string") {
        check(node.source, node.source.value);
      }
    },
    CallExpression(node) {
      const [first] = node.arguments;
      if (
        node.callee.type === "Identifier" &&
        calls.includes(node.callee.name) &&
        first?.type === "Literal" &&
        typeof first.value === "string"
      ) {
        check(first, first.value);
      }
    },
  };
}

const layersSchema = {
  type: "object",
  properties: {
    root: { type: "string" },
    layers: { type: "array", items: { type: "array", items: { type: "string" } } },
    allow: {
      type: "array",
      items: {
        type: "object",
        properties: { from: { type: "string" }, to: { type: "string" }, why: { type: "string" } },
        required: ["from", "to", "why"],
      },
    },
  },
  required: ["root", "layers"],
  additionalProperties: false,
};

/**
 * `layers`: dirq's folders (and top-level files) from the bottom up, a list of units per layer.
 * A file may load modules of its own layer and those below; a module above it only by an
 * `allow` entry (`from` and `to` are paths under `root`), which says why.
 */
const noUpwardImport = {
  meta: {
    type: "problem",
    docs: { description: "dirq's core imports only from its own layer and the layers below" },
    schema: [layersSchema],
    messages: {
      unplaced:
        "{{unit}} is in no layer of DIRQ_LAYERS (eslint.config.js): give it the layer its imports put it in",
      upward:
        "{{from}} may not import {{to}}: {{toLayer}} is a layer above {{fromLayer}}, and dirq's core imports only from its own layer and those below (DIRQ_LAYERS in eslint.config.js; docs/internals.md)",
    },
  },
  create(context) {
    const { root: rootOption, layers, allow = [] } = context.options[0];
    const root = resolve(context.cwd, rootOption);
    const layerOf = new Map(layers.flatMap((units, index) => units.map((unit) => [unit, index])));
    const file = context.filename;
    const fromUnit = unitOf(root, file);
    const fromLayer = layerOf.get(fromUnit);
    if (fromUnit === null) return {};
    if (fromLayer === undefined) {
      return {
        Program(node) {
          context.report({ node, messageId: "unplaced", data: { unit: fromUnit } });
        },
      };
    }
    return moduleVisitors((node, specifier) => {
      if (!specifier.startsWith(".")) return;
      const target = resolve(dirname(file), specifier);
      const toUnit = unitOf(root, target);
      const toLayer = layerOf.get(toUnit);
      if (toLayer === undefined || toLayer <= fromLayer) return;
      const from = relative(root, file).split(sep).join("/");
      const to = relative(root, target).split(sep).join("/").replace(/\.js$/, ".ts");
      if (allow.some((entry) => entry.from === from && entry.to === to)) return;
      context.report({
        node,
        messageId: "upward",
        data: { from, fromLayer: fromUnit, to, toLayer: toUnit },
      });
    });
  },
};

/**
 * A package that only some of dirq's folders may load at run time, by any literal name:
 * `import`, `import()`, `require()` or `lazyModule()` (`modules`), in the files the config
 * object applies the rule to.
 */
const noModule = {
  meta: {
    type: "problem",
    docs: { description: "a package that this part of dirq may not load" },
    schema: [
      {
        type: "object",
        properties: {
          modules: { type: "array", items: { type: "string" } },
          why: { type: "string" },
        },
        required: ["modules", "why"],
        additionalProperties: false,
      },
    ],
    messages: { forbidden: "{{name}} may not be loaded here: {{why}}" },
  },
  create(context) {
    const { modules, why } = context.options[0];
    const named = (specifier) =>
      modules.some((name) => specifier === name || specifier.startsWith(`${name}/`));
    return moduleVisitors(
      (node, specifier) => {
        if (named(specifier)) {
          context.report({ node, messageId: "forbidden", data: { name: specifier, why } });
        }
      },
      ["require", "lazyModule"],
    );
  },
};

export default { rules: { "no-upward-import": noUpwardImport, "no-module": noModule } };
