export * from "./block-stream.js";
export * from "./chunk.js";
export * from "./dispatcher.js";
export * from "./fit.js";
