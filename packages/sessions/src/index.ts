export * from "./store.js";
export * from "./transcript.js";
export * from "./run-records.js";
export * from "./lane.js";
