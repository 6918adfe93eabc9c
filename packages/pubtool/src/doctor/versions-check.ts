import type { Config } from "../config/load-config.js";
import { readManifest } from "../publish/manifest.js";
import { describeRelease, registryRelease } from "../publish/prerelease.js";
import { type Check, passingCheck } from "./report.js";

/**
 * What each registry gets of each package's version: a prerelease goes to jsreg under a
 * dist-tag, to pyreg in its PEP 440 form, to rustreg as is. A version a registry cannot take
 * fails; a manifest doctor cannot read (not built yet) is named, not judged. `null` when no
 * manifest could be read at all.
 */
export function versionsCheck(config: Config | null): Check | null {
  if (config === null) return null;
  const check = passingCheck("versions", "what each registry gets");
  let read = 0;
  for (const entry of config.packages) {
    const label = `${entry.name} (${entry.kind})`;
    let version: string;
    try {
      const manifest = readManifest(config, entry);
      version = manifest.declared ?? manifest.version;
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      check.messages.push(`${label}: version not read (${detail}); not judged`);
      continue;
    }
    read++;
    const release = registryRelease(entry, version);
    if (release.problem !== null) check.status = "fail";
    check.messages.push(`${label}: ${version}: ${describeRelease(release)}`);
  }
  return read === 0 ? null : check;
}
