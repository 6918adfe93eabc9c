import { relative, sep } from "node:path";
import type { Config } from "../config/load-config.js";
import { currentRepository } from "../repository.js";
import { scanWorkflows } from "../workflows/scan-workflows.js";
import { readStepConfigs } from "../workflows/step-configs.js";
import { judgedRegistries } from "../workflows/step-target.js";
import { packageSteps } from "./package-steps.js";
import { declaredPhase } from "./declared-phase.js";
import { localPhase } from "./local-phase.js";
import { versionsCheck } from "./versions-check.js";
import { REGISTRY_PHASE_HEADING, registryPhase } from "./registry-phase.js";
import { CLOSING_NOTE, type DoctorReport, neutralPhase, type Phase } from "./report.js";

/** Runs the doctor phases for the repository at `root`. */
export async function runDoctor(options: {
  root: string;
  config: Config | null;
  env: NodeJS.ProcessEnv;
}): Promise<DoctorReport> {
  const { root, env } = options;
  const packages = options.config?.packages ?? [];
  const repository = currentRepository(root, env);
  const scan = scanWorkflows(root, repository);
  // The config doctor reads, as the publishing steps name it: relative to the repository root.
  const configFile =
    options.config === null
      ? "pubtool.toml"
      : relative(root, options.config.file).split(sep).join("/");
  const targets = scan.jobs.flatMap((job) => job.targets);
  const configs = readStepConfigs(
    root,
    targets,
    options.config === null ? null : { file: configFile, packages },
  );
  const published = packageSteps(packages, scan, configs, judgedRegistries(targets, env));
  const phases: Phase[] = [
    localPhase(scan, configs, {
      packages: options.config === null ? null : published,
      versions: versionsCheck(options.config),
    }),
    declaredPhase(root, packages, scan, env, configs),
  ];
  const registry = await registryPhase(packages, env, repository);
  phases.push(
    registry ??
      neutralPhase("registry", REGISTRY_PHASE_HEADING, "skipped: RUSTREG_DOCTOR_TOKEN is not set"),
  );
  return {
    ok: phases.every((phase) => phase.status !== "fail"),
    phases,
    packages: published,
    note: CLOSING_NOTE,
  };
}
