export * from "./adapter.js";
export * from "./config.js";
export * from "./normalize.js";
export * from "./plugin.js";
export * from "./render.js";
export * from "./signature.js";
