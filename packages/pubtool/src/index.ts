export { loadConfig, parseConfig, type Config } from "./config/load-config.js";
export type { PackageEntry, RegistryKind, TrustPolicy } from "./config/schema.js";
export { runDoctor } from "./doctor/run-doctor.js";
export type { Check, DoctorReport, Phase, Status } from "./doctor/report.js";
export { isPubtoolError, PubtoolError, type PubtoolErrorCode } from "./errors.js";
export { runPreflight, type PreflightReport } from "./publish/preflight.js";
export {
  scanWorkflows,
  type PublishingJob,
  type WorkflowScan,
} from "./workflows/scan-workflows.js";
