export {
  type DirqConfig,
  EMPTY_CONFIG,
  loadConfigFile,
  loadConfigs,
  type TableConfig,
} from "./config/load-config.js";
export { type InitOptions, starterConfig, writeStarterConfig } from "./config/starter-config.js";
export {
  DirqIndex,
  type OpenIndexOptions,
  openIndex,
  type QueryResult,
  type SqlValue,
} from "./engine.js";
export { DirqError, type DirqErrorCode, isDirqError } from "./errors.js";
export { type ExtensionSpec, parseExtensionArgument } from "./extensions/load-extensions.js";
export { FILE_PATH_COLUMN, ROW_INDEX_COLUMN } from "./indexer/parsed-tables.js";
export { PATH_TABLE_COLUMNS } from "./indexer/path-tables.js";
export { jsonChunks, jsonValue, toJson } from "./output/json.js";
export { renderTable } from "./output/table.js";
export {
  createProgressReporter,
  type ProgressMode,
  type ProgressReporter,
  progressModeFromEnv,
} from "./progress/reporter.js";
export type { SkippedPath } from "./scan/walk.js";
