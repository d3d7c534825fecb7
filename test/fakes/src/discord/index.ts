export * from "./gateway.js";
export * from "./server.js";
