import type { PackageEntry, RegistryKind } from "../config/schema.js";
import { describeJob, type WorkflowScan } from "../workflows/scan-workflows.js";
import { publishesPackage, type StepConfigs } from "../workflows/step-target.js";
import type { PackageSteps, PublishingStepRef } from "./report.js";

/**
 * For each package of doctor's config, the publishing steps that publish it to the registry
 * doctor judges (whichever config they read), and those whose target cannot be known locally.
 */
export function packageSteps(
  packages: readonly PackageEntry[],
  scan: WorkflowScan,
  configs: StepConfigs,
  judged: Readonly<Record<RegistryKind, string | null>>,
): PackageSteps[] {
  return packages.map((entry) => {
    const steps: PublishingStepRef[] = [];
    const undetermined: (PublishingStepRef & { why: string })[] = [];
    for (const job of scan.jobs) {
      for (const target of job.targets) {
        const answer = publishesPackage(target, entry, configs, judged);
        if (answer.answer === "no") continue;
        const ref: PublishingStepRef = {
          workflow: job.entryFile,
          file: job.file,
          job: job.job,
          via: describeJob(job),
          line: target.line,
          config: target.config,
        };
        if (answer.answer === "yes") steps.push(ref);
        else undetermined.push({ ...ref, why: answer.why });
      }
    }
    return {
      name: entry.name,
      kind: entry.kind,
      registry: judged[entry.kind],
      steps,
      undetermined,
    };
  });
}

/** `release.yml: job publish, step at line 14, reads pubtool-app.toml`. */
export function describeStep(step: PublishingStepRef): string {
  const at = step.file === step.workflow ? `line ${step.line}` : `${step.file} line ${step.line}`;
  const reads = step.config === null ? "" : `, reads ${step.config}`;
  return `${step.via}, step at ${at}${reads}`;
}
