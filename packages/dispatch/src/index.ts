export * from "./admission-port.js";
export * from "./commands.js";
export * from "./dispatcher.js";
export * from "./inbound-result.js";
export * from "./pairing.js";
export * from "./policy.js";
export * from "./rate-limit.js";
