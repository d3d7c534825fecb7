export * from "./depths.js";
export * from "./epoch.js";
export * from "./inspect.js";
export * from "./lease/store.js";
export * from "./mailbox.js";
export * from "./redis.js";
export * from "./worker-room.js";
