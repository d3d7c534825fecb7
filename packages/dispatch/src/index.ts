export * from "./dispatcher.js";
export * from "./policy.js";
