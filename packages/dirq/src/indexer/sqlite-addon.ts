import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { packageFile } from "../package-files.js";

/** Environment variables that change node-gyp-build's choice: with one set, it chooses. */
const SEARCH_OVERRIDES = [
  "PREBUILDS_ONLY",
  "npm_config_arch",
  "npm_config_platform",
  "LIBC",
  "ARM_VERSION",
  // node-gyp-build's name for "use this folder": the package name, upper-cased, `-` as `_`.
  "@ROCICORP/ZERO_SQLITE3_PREBUILD",
];

interface AddonRecord {
  abi: string;
  platform: string;
  arch: string;
  path: string;
}

/**
 * SQLite's native addon, loaded from where install found it for this Node ABI, platform and
 * architecture (scripts/record-sqlite-addon.mjs), or null: no record, another Node, an
 * override set, or a file that no longer loads. The caller then lets node-gyp-build search,
 * which resolves the package and lists its prebuilds on every start.
 */
export function recordedSqliteAddon(): object | null {
  if (SEARCH_OVERRIDES.some((name) => process.env[name] !== undefined)) return null;
  let record: AddonRecord;
  try {
    record = JSON.parse(
      readFileSync(packageFile("native", "build", "sqlite-addon.json"), "utf8"),
    ) as AddonRecord;
  } catch {
    return null;
  }
  if (
    record.abi !== process.versions.modules ||
    record.platform !== process.platform ||
    record.arch !== process.arch ||
    typeof record.path !== "string"
  ) {
    return null;
  }
  const addon = { exports: {} };
  try {
    process.dlopen(addon, resolve(packageFile(), record.path));
  } catch {
    return null;
  }
  return addon.exports;
}
