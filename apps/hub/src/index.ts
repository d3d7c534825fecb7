export * from "./adapters.js";
export * from "./hub.js";
export * from "./models.js";
export * from "./plugins.js";
export * from "./state.js";
export * from "./supervisor.js";
