import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parse as parseToml } from "smol-toml";
import type { Config } from "../config/load-config.js";
import type { PackageEntry, RegistryKind } from "../config/schema.js";
import { PubtoolError } from "../errors.js";
import { pep440 } from "./prerelease.js";

/** The manifest file each kind reads. */
export const MANIFEST_FILE: Record<RegistryKind, string> = {
  rustreg: "Cargo.toml",
  pyreg: "pyproject.toml",
  jsreg: "package.json",
};

/** What pubtool needs from a package manifest. */
export interface Manifest {
  dir: string;
  file: string;
  name: string;
  version: string;
  /** The version as the manifest spells it, when the registry gets another form (pyreg's PEP 440). */
  declared?: string;
  /** Names of the package's runtime dependencies (any registry). */
  dependencies: string[];
}

function fail(entry: PackageEntry, file: string, message: string): never {
  throw new PubtoolError("MANIFEST_INVALID", `package ${entry.name}: ${file}: ${message}`);
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** `version.workspace = true`: the version from the nearest `[workspace.package]` above. */
function workspaceVersion(dir: string): string | null {
  for (let current = dirname(dir); ; current = dirname(current)) {
    const file = join(current, "Cargo.toml");
    if (existsSync(file)) {
      const data = asRecord(parseToml(readFileSync(file, "utf8")));
      const version = asRecord(asRecord(data.workspace).package).version;
      if (typeof version === "string") return version;
    }
    if (dirname(current) === current) return null;
  }
}

function readCargo(entry: PackageEntry, dir: string, file: string): Manifest {
  const data = asRecord(parseToml(readFileSync(join(dir, file), "utf8")));
  const pkg = asRecord(data.package);
  if (typeof pkg.name !== "string") fail(entry, file, "no [package] name");
  let version = pkg.version;
  if (asRecord(version).workspace === true) version = workspaceVersion(dir);
  if (typeof version !== "string") fail(entry, file, "no readable [package] version");
  const dependencies = ["dependencies", "build-dependencies"].flatMap((key) =>
    Object.entries(asRecord(data[key])).map(([name, spec]) => {
      const renamed = asRecord(spec).package;
      return typeof renamed === "string" ? renamed : name;
    }),
  );
  return { dir, file, name: pkg.name, version, dependencies };
}

function readPyproject(entry: PackageEntry, dir: string, file: string): Manifest {
  const data = asRecord(parseToml(readFileSync(join(dir, file), "utf8")));
  const project = asRecord(data.project);
  if (typeof project.name !== "string") fail(entry, file, "no [project] name");
  if (typeof project.version !== "string") {
    const dynamic = Array.isArray(project.dynamic) && project.dynamic.includes("version");
    fail(
      entry,
      file,
      dynamic
        ? "the version is dynamic; pubtool needs a static [project] version"
        : "no [project] version",
    );
  }
  const requirements = Array.isArray(project.dependencies) ? project.dependencies : [];
  const dependencies = requirements
    .filter((value): value is string => typeof value === "string")
    .map((requirement) => /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(requirement)?.[1] ?? "")
    .filter((name) => name !== "");
  // Wheels, sdists and the registry carry the PEP 440 form (0.2.0-rc.1 is 0.2.0rc1 there).
  const version = pep440(project.version) ?? project.version;
  const declared = version === project.version ? {} : { declared: project.version };
  return { dir, file, name: project.name, version, ...declared, dependencies };
}

function readPackageJson(entry: PackageEntry, dir: string, file: string): Manifest {
  let data: Record<string, unknown>;
  try {
    data = asRecord(JSON.parse(readFileSync(join(dir, file), "utf8")));
  } catch (error) {
    fail(entry, file, `invalid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof data.name !== "string") fail(entry, file, "no name");
  if (typeof data.version !== "string") fail(entry, file, "no version");
  const dependencies = ["dependencies", "peerDependencies", "optionalDependencies"].flatMap((key) =>
    Object.keys(asRecord(data[key])),
  );
  return { dir, file, name: data.name, version: data.version, dependencies };
}

/** Reads the manifest of `entry`; a missing directory or file or an unreadable field is an error. */
export function readManifest(config: Config, entry: PackageEntry): Manifest {
  const dir = resolve(config.root, entry.path);
  const file = MANIFEST_FILE[entry.kind];
  if (!existsSync(dir)) fail(entry, entry.path, "no such directory");
  if (!existsSync(join(dir, file))) fail(entry, join(entry.path, file), "no such file");
  try {
    if (entry.kind === "rustreg") return readCargo(entry, dir, file);
    if (entry.kind === "pyreg") return readPyproject(entry, dir, file);
    return readPackageJson(entry, dir, file);
  } catch (error) {
    if (error instanceof PubtoolError) throw error;
    fail(
      entry,
      file,
      error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error),
    );
  }
}

/**
 * Orders packages so that each comes after the configured packages it depends on; the config's
 * order is kept otherwise. A dependency cycle is an error.
 */
export function dependencyOrder<T extends { entry: PackageEntry; manifest: Manifest | null }>(
  items: readonly T[],
): T[] {
  const byName = new Map(
    items.map((item) => [`${item.entry.kind}:${item.manifest?.name ?? item.entry.name}`, item]),
  );
  const done = new Set<T>();
  const visiting = new Set<T>();
  const order: T[] = [];
  const visit = (item: T, chain: string[]) => {
    if (done.has(item)) return;
    if (visiting.has(item)) {
      throw new PubtoolError(
        "CONFIG_INVALID",
        `dependency cycle: ${[...chain, item.entry.name].join(" -> ")}`,
      );
    }
    visiting.add(item);
    for (const dependency of item.manifest?.dependencies ?? []) {
      const target = byName.get(`${item.entry.kind}:${dependency}`);
      if (target && target !== item) visit(target, [...chain, item.entry.name]);
    }
    visiting.delete(item);
    done.add(item);
    order.push(item);
  };
  for (const item of items) visit(item, []);
  return order;
}
