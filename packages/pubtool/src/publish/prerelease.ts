import type { PackageEntry } from "../config/schema.js";

/** The dist-tag a jsreg prerelease goes under when its package names none. */
export const DEFAULT_DIST_TAG = "next";

/** `1.2.3-rc.1+build`: the prerelease part (`rc.1`) of a semver version, `null` for a release. */
export function semverPrerelease(version: string): string | null {
  const match = /^v?\d+\.\d+\.\d+-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)(?:\+[0-9A-Za-z.-]+)?$/.exec(
    version.trim(),
  );
  return match?.[1] ?? null;
}

/**
 * The version grammar of PEP 440's appendix (what pip and the registry parse), case-insensitive:
 * epoch, release, pre, post, dev and local parts, each with the separators it tolerates.
 */
const PEP440 = new RegExp(
  "^\\s*v?" +
    "(?:(?<epoch>[0-9]+)!)?" +
    "(?<release>[0-9]+(?:\\.[0-9]+)*)" +
    "(?<pre>[-_.]?(?<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?<pre_n>[0-9]+)?)?" +
    "(?<post>(?:-(?<post_n1>[0-9]+))|(?:[-_.]?(?<post_l>post|rev|r)[-_.]?(?<post_n2>[0-9]+)?))?" +
    "(?<dev>[-_.]?(?<dev_l>dev)[-_.]?(?<dev_n>[0-9]+)?)?" +
    "(?:\\+(?<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?" +
    "\\s*$",
  "i",
);

const PRE_LABEL: Readonly<Record<string, string>> = {
  alpha: "a",
  a: "a",
  beta: "b",
  b: "b",
  c: "rc",
  pre: "rc",
  preview: "rc",
  rc: "rc",
};

/** `007` → `7`: PEP 440 compares numbers, so the normal form drops leading zeros. */
function number(text: string | undefined): string {
  return String(BigInt(text ?? "0"));
}

/**
 * The normal PEP 440 form of `version` (`0.2.0-rc.1` → `0.2.0rc1`, `1.0.0-alpha.2` → `1.0.0a2`,
 * `1.0.0-beta` → `1.0.0b0`), as `packaging.version.Version` prints it; `null` when the registry
 * cannot take it (`1.0.0-next.1`).
 */
export function pep440(version: string): string | null {
  const match = PEP440.exec(version);
  const parts = match?.groups;
  if (parts === undefined) return null;
  let text =
    parts.epoch !== undefined && number(parts.epoch) !== "0" ? `${number(parts.epoch)}!` : "";
  text += (parts.release ?? "").split(".").map(number).join(".");
  if (parts.pre !== undefined) {
    text += `${PRE_LABEL[(parts.pre_l ?? "").toLowerCase()] ?? ""}${number(parts.pre_n)}`;
  }
  if (parts.post !== undefined) text += `.post${number(parts.post_n1 ?? parts.post_n2)}`;
  if (parts.dev !== undefined) text += `.dev${number(parts.dev_n)}`;
  if (parts.local !== undefined) {
    const segments = parts.local.toLowerCase().split(/[-_.]/);
    text += `+${segments.map((part) => (/^[0-9]+$/.test(part) ? number(part) : part)).join(".")}`;
  }
  return text;
}

/** What one registry gets of a package's version. */
export interface RegistryRelease {
  /** The version as the manifest has it. */
  version: string;
  /** The version the registry receives (pyreg: the PEP 440 form). */
  published: string;
  /** True for a prerelease (semver `-pre`, or a PEP 440 a/b/rc/dev version). */
  prerelease: boolean;
  /** jsreg: the dist-tag it goes under (`latest` for a release). */
  distTag: string | null;
  /** Why the registry cannot take it, else `null`. */
  problem: string | null;
}

/** What the registry of `entry` gets of `version`. */
export function registryRelease(entry: PackageEntry, version: string): RegistryRelease {
  const semverPre = semverPrerelease(version);
  if (entry.kind === "jsreg") {
    const distTag = semverPre === null ? "latest" : (entry.dist_tag ?? DEFAULT_DIST_TAG);
    return { version, published: version, prerelease: semverPre !== null, distTag, problem: null };
  }
  if (entry.kind === "rustreg") {
    return {
      version,
      published: version,
      prerelease: semverPre !== null,
      distTag: null,
      problem: null,
    };
  }
  const normal = pep440(version);
  if (normal === null) {
    return {
      version,
      published: version,
      prerelease: semverPre !== null,
      distTag: null,
      problem: `${version} has no PEP 440 form, so pyreg cannot take it; use an a, b or rc prerelease (0.2.0-rc.1 becomes 0.2.0rc1)`,
    };
  }
  const prerelease = /(a|b|rc)\d+|\.dev\d+/.test(normal.replace(/\+.*$/, ""));
  return { version, published: normal, prerelease, distTag: null, problem: null };
}

/** `0.2.0-rc.1 → 0.2.0rc1 (PEP 440)`, `0.2.0-rc.1 under dist-tag next`: one line per registry. */
export function describeRelease(release: RegistryRelease): string {
  if (release.problem !== null) return release.problem;
  const kind = release.prerelease ? "prerelease " : "";
  if (release.distTag !== null) {
    return `${kind}${release.published} under dist-tag ${release.distTag}`;
  }
  if (release.published !== release.version) {
    return `${kind}${release.published} (the PEP 440 form of ${release.version})`;
  }
  return `${kind}${release.published} as is`;
}
