export * from "./adapter.js";
export * from "./normalize.js";
export * from "./render.js";
