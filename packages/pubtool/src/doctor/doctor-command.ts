// What `pubtool doctor` loads on demand: the checks and their report, with the YAML reader the
// workflow checks need, stay out of the start of every other command.
export { renderReport } from "./report.js";
export { runDoctor } from "./run-doctor.js";
