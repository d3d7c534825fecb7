export * from "./auth-limiter.js";
export * from "./authorization.js";
export * from "./connection-limits.js";
export * from "./event-bus.js";
export * from "./probes.js";
export * from "./protocol.js";
export * from "./server.js";
export * from "./webchat-adapter.js";
