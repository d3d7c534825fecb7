export * from "./channel.js";
export * from "./config.js";
export * from "./errors.js";
export * from "./finalize.js";
export * from "./logger.js";
export * from "./msg-context.js";
export * from "./sanitize.js";
export * from "./session-key.js";
