export * from "./fake-api.js";
export * from "./files.js";
export * from "./http.js";
export * from "./local.js";
export * from "./model-api.js";
export * from "./multipart.js";
export * from "./silent.js";
