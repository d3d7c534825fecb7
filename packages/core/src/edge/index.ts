export * from "./errors.js";
export * from "./lease.js";
export * from "./log-fields.js";
export * from "./process-identity.js";
export * from "./segment-identity.js";
export * from "./sleep.js";
export * from "./status.js";
export * from "./webhook.js";
