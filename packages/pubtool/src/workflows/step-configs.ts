import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../config/load-config.js";
import type { PackageEntry } from "../config/schema.js";
import type { StepConfig, StepTarget } from "./step-target.js";

/**
 * Reads every config the publishing steps read (`targets`), so that a step is credited with the
 * packages it really publishes whichever config doctor itself reads. `own` is doctor's config
 * (its path relative to the root), taken as loaded. A missing or invalid config is kept as the
 * problem to report for the steps that read it.
 */
export function readStepConfigs(
  root: string,
  targets: readonly StepTarget[],
  own: { file: string; packages: readonly PackageEntry[] } | null,
): Map<string, StepConfig> {
  const configs = new Map<string, StepConfig>();
  if (own !== null) configs.set(own.file, { packages: own.packages });
  for (const target of targets) {
    const file = target.config;
    if (file === null || configs.has(file)) continue;
    configs.set(file, readOne(root, file));
  }
  return configs;
}

function readOne(root: string, file: string): StepConfig {
  const path = join(root, file);
  if (!existsSync(path)) return { problem: "does not exist" };
  try {
    return { packages: parseConfig(readFileSync(path, "utf8"), path, file).packages };
  } catch (error) {
    const detail = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
    return { problem: `cannot be used (${detail})` };
  }
}
