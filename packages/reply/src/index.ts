export { BlockStreamer, type BlockStreamerOptions } from "./block-stream.js";
export { chunkText } from "./chunk.js";
export * from "./dispatcher.js";
export * from "./failed-deliveries.js";
export * from "./fit.js";
export * from "./settle-relay.js";
