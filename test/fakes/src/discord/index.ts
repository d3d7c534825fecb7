export * from "./gateway.js";
export { snowflake } from "./payloads.js";
export { routeTemplate } from "./rest.js";
export * from "./server.js";
export * from "./types.js";
