export * from "./anthropic.js";
export * from "./chat-platform.js";
export * from "./openai.js";
export * from "./telegram.js";
export * from "./discord.js";
export * from "./discord-gateway.js";
