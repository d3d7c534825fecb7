export * from "./mrkdwn.js";
export * from "./server.js";
export * from "./types.js";
