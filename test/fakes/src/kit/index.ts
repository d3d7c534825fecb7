export * from "./fake-api.js";
export * from "./http.js";
