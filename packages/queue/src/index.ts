export * from "./mailbox.js";
export * from "./redis.js";
