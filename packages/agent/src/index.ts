export * from "./model.js";
export * from "./providers/offline.js";
export * from "./providers/openai.js";
export * from "./runner.js";
export * from "./tools.js";
export * from "./turn.js";
