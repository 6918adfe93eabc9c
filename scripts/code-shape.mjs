#!/usr/bin/env node
// The shape of a package's source, read off its own syntax trees and import graph: what a review
// of the code's structure counts (lines, the longest functions and classes, functions over the
// length the team keeps to, imports that cross folders, import cycles). Prints a table, or JSON
// with --json. Usage: node scripts/code-shape.mjs [--json] [package folder, default packages/dirq]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const LONG_FUNCTION_LINES = 80;
const LONGEST_COUNTED = 20;

const args = process.argv.slice(2);
const json = args.includes("--json");
const packageDir = resolve(args.find((arg) => !arg.startsWith("--")) ?? "packages/dirq");
const srcDir = join(packageDir, "src");

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

/** The top-level folder (or file) of `src/` a module is in: the unit the layers name. */
function unitOf(path) {
  return relative(srcDir, path).split("/")[0];
}

function lineSpan(source, node) {
  const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
  return source.getLineAndCharacterOfPosition(node.end).line - first + 1;
}

function nameOf(node) {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isArrowFunction(node) ||
  ts.isFunctionExpression(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** A module's imports that run (type-only ones are left out), `import()` included. */
function runtimeImports(node, found) {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause;
    const named = clause?.namedBindings;
    const typesOnly =
      clause?.isTypeOnly ||
      (clause !== undefined &&
        clause.name === undefined &&
        named !== undefined &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((element) => element.isTypeOnly));
    if (!typesOnly) found.push(node.moduleSpecifier.text);
  } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
    found.push(node.moduleSpecifier.text);
  } else if (
    ts.isCallExpression(node) &&
    node.expression.kind === ts.SyntaxKind.ImportKeyword &&
    node.arguments[0] !== undefined &&
    ts.isStringLiteral(node.arguments[0])
  ) {
    found.push(node.arguments[0].text);
  }
  ts.forEachChild(node, (child) => runtimeImports(child, found));
}

const files = sourceFiles(srcDir);
let lines = 0;
const spans = [];
const graph = new Map();
for (const file of files) {
  const text = readFileSync(file, "utf8");
  lines += text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      spans.push({ kind: "function", name: nameOf(node), file, lines: lineSpan(source, node) });
    } else if (ts.isClassDeclaration(node)) {
      spans.push({ kind: "class", name: nameOf(node), file, lines: lineSpan(source, node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const specifiers = [];
  runtimeImports(source, specifiers);
  graph.set(
    file,
    specifiers
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, ".ts"))),
  );
}

const crossFolderImports = [...graph].reduce(
  (count, [file, targets]) =>
    count + targets.filter((target) => graph.has(target) && unitOf(target) !== unitOf(file)).length,
  0,
);

/** Strongly connected components of more than one module (Tarjan): the import cycles. */
function importCycles() {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const connect = (module) => {
    index.set(module, next);
    low.set(module, next);
    next++;
    stack.push(module);
    onStack.add(module);
    for (const target of graph.get(module) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        connect(target);
        low.set(module, Math.min(low.get(module), low.get(target)));
      } else if (onStack.has(target)) {
        low.set(module, Math.min(low.get(module), index.get(target)));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(relative(srcDir, member));
    } while (member !== module);
    if (component.length > 1) cycles.push(component);
  };
  for (const module of graph.keys()) if (!index.has(module)) connect(module);
  return cycles;
}

const longest = [...spans].sort((a, b) => b.lines - a.lines).slice(0, LONGEST_COUNTED);
const tooLong = spans
  .filter((span) => span.kind === "function" && span.lines > LONG_FUNCTION_LINES)
  .map((span) => ({ ...span, file: relative(srcDir, span.file) }));
const shape = {
  package: relative(process.cwd(), packageDir) || ".",
  files: files.length,
  lines,
  longestTotalLines: longest.reduce((sum, span) => sum + span.lines, 0),
  longest: longest.map((span) => ({ ...span, file: relative(srcDir, span.file) })),
  functionsOver80Lines: tooLong,
  crossFolderImports,
  importCycles: importCycles(),
};

if (json) {
  console.log(JSON.stringify(shape, null, 2));
} else {
  console.log(`${shape.package}/src: ${shape.files} files, ${shape.lines} lines`);
  console.log(
    `the ${LONGEST_COUNTED} longest functions and classes: ${shape.longestTotalLines} lines`,
  );
  for (const span of shape.longest) {
    console.log(`  ${String(span.lines).padStart(4)}  ${span.kind} ${span.name}  ${span.file}`);
  }
  console.log(`functions over ${LONG_FUNCTION_LINES} lines: ${tooLong.length}`);
  for (const span of tooLong) console.log(`  ${span.lines}  ${span.name}  ${span.file}`);
  console.log(
    `imports across top-level folders (run-time, import() included): ${crossFolderImports}`,
  );
  console.log(`import cycles: ${shape.importCycles.length}`);
  for (const cycle of shape.importCycles) console.log(`  ${cycle.join(" -> ")}`);
}
