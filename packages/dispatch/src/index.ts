export * from "./commands.js";
export * from "./dispatcher.js";
export * from "./policy.js";
export * from "./queue-mode.js";
