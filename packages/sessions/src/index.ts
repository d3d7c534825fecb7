export * from "./activity.js";
export * from "./approvals.js";
export * from "./lane.js";
export * from "./recovery.js";
export * from "./run-records.js";
export * from "./store.js";
export * from "./transcript.js";
export * from "./writer.js";
