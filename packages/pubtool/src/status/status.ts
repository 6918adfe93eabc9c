import { execFileSync } from "node:child_process";
import { join, relative, resolve, sep } from "node:path";
import { parse as parseToml } from "smol-toml";
import type { Config } from "../config/load-config.js";
import type { PackageEntry, RegistryKind } from "../config/schema.js";
import { MANIFEST_FILE, readManifest } from "../publish/manifest.js";
import { pep440 } from "../publish/prerelease.js";
import { readHistory } from "./registry-history.js";

/** One version a tag releases, and the tag. */
export interface TaggedVersion {
  version: string;
  tag: string;
}

/** One package: what of its tagged versions is out, what is missing, what is out untagged. */
export interface PackageStatus {
  name: string;
  kind: RegistryKind;
  registry: "found" | "absent" | "unreachable";
  /** Why the registry could not be read (`unreachable`). */
  reason: string | null;
  out: TaggedVersion[];
  /** Tagged, but not on the registry: a half-made release. */
  missing: TaggedVersion[];
  /** On the registry, but no tag releases it. */
  untagged: string[];
  /** The checkout's version, and whether the registry has it. */
  current: { version: string; published: boolean } | null;
}

export interface StatusReport {
  ok: boolean;
  /** `null` when the tags could not be read (not a git repository). */
  tags: string[] | null;
  packages: PackageStatus[];
}

function git(root: string, args: readonly string[]): string | null {
  try {
    return execFileSync("git", ["-C", root, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return null;
  }
}

/** The repository's tags, newest first; `null` outside git. */
function readTags(root: string): string[] | null {
  const out = git(root, [
    "for-each-ref",
    "--sort=-creatordate",
    "--format=%(refname:short)",
    "refs/tags",
  ]);
  return out === null ? null : out.split("\n").filter((line) => line.trim() !== "");
}

/** The version a manifest's text declares, `null` when it has none readable. */
function versionInText(kind: RegistryKind, text: string): string | null {
  try {
    if (kind === "jsreg") {
      const version = (JSON.parse(text) as { version?: unknown }).version;
      return typeof version === "string" ? version : null;
    }
    const data = parseToml(text) as Record<string, Record<string, unknown> | undefined>;
    const version = kind === "rustreg" ? data.package?.version : data.project?.version;
    return typeof version === "string" ? version : null;
  } catch {
    return null;
  }
}

/** `pubtool-v1.2.0`, `pubtool@1.2.0` or (for a package git does not track) `v1.2.0`. */
function versionInTag(tag: string, name: string, untracked: boolean): string | null {
  const bare = name.replace(/^@[^/]+\//, "");
  for (const prefix of [name, bare]) {
    for (const joint of ["-v", "-", "@", "/v", "/"]) {
      const rest = tag.startsWith(`${prefix}${joint}`)
        ? tag.slice(prefix.length + joint.length)
        : null;
      if (rest !== null && /^\d+\.\d+/.test(rest)) return rest;
    }
  }
  return untracked && /^v?\d+\.\d+\.\d+\S*$/.test(tag) ? tag.replace(/^v/, "") : null;
}

/** The version of `entry` each tag releases: the manifest at that tag, else the tag's name. */
function taggedVersions(
  root: string,
  config: Config,
  entry: PackageEntry,
  tags: readonly string[],
): TaggedVersion[] {
  const manifest = relative(root, join(resolve(config.root, entry.path), MANIFEST_FILE[entry.kind]))
    .split(sep)
    .join("/");
  // A package built outside git (a staged crate) has no manifest at any tag: the tag names it.
  const untracked = (git(root, ["ls-files", "--", manifest]) ?? "").trim() === "";
  const found: TaggedVersion[] = [];
  for (const tag of tags) {
    const text = untracked ? null : git(root, ["show", `${tag}:${manifest}`]);
    const version =
      (text === null ? null : versionInText(entry.kind, text)) ??
      versionInTag(tag, entry.name, untracked || text === null);
    if (version !== null) found.push({ version, tag });
  }
  return found;
}

/** The form a registry lists a version in (pyreg: PEP 440). */
function registryForm(kind: RegistryKind, version: string): string {
  return kind === "pyreg" ? (pep440(version) ?? version) : version;
}

/** `pubtool status`: each package's tagged versions against its registry's. */
export async function runStatus(
  config: Config,
  root: string,
  env: NodeJS.ProcessEnv,
): Promise<StatusReport> {
  const tags = readTags(root);
  const packages = await Promise.all(
    config.packages.map((entry) => packageStatus(root, config, entry, tags ?? [], env)),
  );
  return { ok: packages.every((entry) => entry.missing.length === 0), tags, packages };
}

async function packageStatus(
  root: string,
  config: Config,
  entry: PackageEntry,
  tags: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<PackageStatus> {
  const history = await readHistory(entry.kind, entry.name, env);
  let current: string | null = null;
  try {
    current = readManifest(config, entry).version;
  } catch {
    current = null;
  }
  const status: PackageStatus = {
    name: entry.name,
    kind: entry.kind,
    registry: history.state,
    reason: history.state === "unreachable" ? history.reason : null,
    out: [],
    missing: [],
    untagged: [],
    current: null,
  };
  if (history.state === "unreachable") return status;
  const published = new Set(
    (history.state === "found" ? history.versions : []).map((v) => registryForm(entry.kind, v)),
  );
  const seen = new Set<string>();
  for (const tagged of taggedVersions(root, config, entry, tags)) {
    const form = registryForm(entry.kind, tagged.version);
    if (seen.has(form)) continue;
    seen.add(form);
    (published.has(form) ? status.out : status.missing).push(tagged);
  }
  status.untagged = [...published].filter((version) => !seen.has(version));
  if (current !== null) {
    status.current = {
      version: current,
      published: published.has(registryForm(entry.kind, current)),
    };
  }
  return status;
}

/** The report as a person reads it. */
export function renderStatus(report: StatusReport): string {
  const lines: string[] = [];
  lines.push(
    report.tags === null
      ? "status: not a git repository, so no tags were read"
      : `status: the registries against ${report.tags.length} tag${report.tags.length === 1 ? "" : "s"}`,
  );
  for (const entry of report.packages) {
    lines.push(`${entry.name} (${entry.kind}):`);
    if (entry.registry === "unreachable") {
      lines.push(`  - registry not read: ${entry.reason ?? ""}; not judged`);
      continue;
    }
    if (entry.registry === "absent") lines.push(`  - not on ${entry.kind} at all`);
    const list = (items: readonly TaggedVersion[]) =>
      items.map((item) => `${item.version} (${item.tag})`).join(", ");
    if (entry.out.length > 0) lines.push(`  ✓ out: ${list(entry.out)}`);
    for (const item of entry.missing) {
      lines.push(`  ✗ missing: ${item.version}: tagged ${item.tag}, not on ${entry.kind}`);
    }
    if (entry.untagged.length > 0) {
      lines.push(`  - on ${entry.kind} without a tag: ${entry.untagged.join(", ")}`);
    }
    if (entry.current !== null) {
      lines.push(
        `  - this checkout: ${entry.current.version}, ${entry.current.published ? "out" : "not published yet"}`,
      );
    }
  }
  const missing = report.packages.reduce((sum, entry) => sum + entry.missing.length, 0);
  lines.push(
    missing === 0
      ? "status: every tagged version is out"
      : `status: ${missing} tagged version${missing === 1 ? " is" : "s are"} missing from ${missing === 1 ? "its registry" : "their registries"}; run the release again (pubtool publish skips what is out)`,
  );
  return `${lines.join("\n")}\n`;
}
