export * from "./adapter.js";
export * from "./config.js";
export * from "./gateway-status.js";
export * from "./normalize.js";
export * from "./outbound.js";
export * from "./packet-guard.js";
export * from "./plugin.js";
export * from "./slash-commands.js";
