export * from "./builders.js";
export { parseTelegramHtml, type TelegramHtmlResult } from "./html.js";
export * from "./server.js";
export * from "./types.js";
