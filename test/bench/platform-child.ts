// The child of platform-process.ts: the fake chat platform, answering the bench's requests over IPC.
import { startFakeChatPlatform } from "../fakes/src/index.js";
import type { PlatformAnswer, PlatformRequest } from "./platform-process.js";

const platform = await startFakeChatPlatform();
const send = (answer: PlatformAnswer) => process.send?.(answer);
process.on("message", (request: PlatformRequest) => {
  if (request.ask === "count") send({ id: request.id, count: platform.messages.length });
  else send({ id: request.id, messages: platform.messages });
});
process.once("SIGTERM", () => {
  void platform.close().then(() => process.exit(0));
});
// The bench's process gone (killed): no orphan.
process.once("disconnect", () => process.exit(0));
send({ url: platform.url });
