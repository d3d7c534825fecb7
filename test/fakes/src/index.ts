export * from "./openai.js";
export * from "./chat-platform.js";
