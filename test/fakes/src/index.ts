export * from "./anthropic.js";
export * from "./chat-platform.js";
export * from "./discord/index.js";
export * from "./kit/index.js";
export * from "./openai.js";
export * from "./slack/index.js";
export * from "./telegram/index.js";
