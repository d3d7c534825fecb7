export * from "./mrkdwn.js";
export * from "./server.js";
