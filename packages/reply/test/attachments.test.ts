import { mkdtempSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ChannelAdapter,
  createLogger,
  type OutboundSegment,
  Outbox,
  PermanentSendError,
  type ReplyTarget,
} from "@hub/core";
import { createRedis } from "@hub/queue";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter, startFakeChatPlatform } from "../../../test/fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { FailedDeliveries, ReplyDispatcher } from "../src/index.js";

const prefix = testPrefix("attachments");
const dir = mkdtempSync(join(tmpdir(), "hub-outbox-"));
const outbox = new Outbox(dir);
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await dropPrefix(prefix);
  rmSync(dir, { recursive: true, force: true });
});

/** What a files-capable platform received: text, or a file's name and bytes read from the path it was given. */
type Received = { text: string } | { file: string; bytes: string; caption: string };

/** A platform that takes files, recording what arrived in order (it reads the bytes at the given path). */
function filePlatform(): ChannelAdapter & { received: Received[] } {
  const received: Received[] = [];
  return {
    channel: "files",
    capabilities: {
      textLimit: 200,
      markdown: "plain",
      threads: false,
      typing: false,
      edit: false,
      files: true,
    },
    received,
    start: async () => {},
    stop: async () => {},
    sendTyping: async () => {},
    send: async (segment: OutboundSegment) => {
      const a = segment.attachment;
      received.push(
        a
          ? { file: a.filename, bytes: readFileSync(a.path, "utf8"), caption: segment.text }
          : { text: segment.text },
      );
      return {};
    },
  };
}

function dispatcher(name: string, sendTimeoutMs?: number): ReplyDispatcher {
  const own = `${prefix}:${name}`;
  const replies = new ReplyDispatcher({
    ...(sendTimeoutMs ? { sendTimeoutMs } : {}),
    redisUrl: REDIS_URL,
    prefix: own,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => ({ textLimit: 200, markdown: "plain", threads: false, typing: false, edit: false }),
    outbox,
    sweepIntervalMs: 100,
    graceMs: 500,
  });
  cleanups.push(async () => {
    await replies.close();
    await dropPrefix(own);
  });
  return replies;
}

describe("files in ordered delivery", () => {
  it("a file is one segment in its place: text, file, text; the queue carries only a reference", async () => {
    const replies = dispatcher("order");
    const adapter = filePlatform();
    const worker = replies.startDelivery(() => adapter);
    cleanups.push(() => worker.close());
    const target: ReplyTarget = { channel: "files", accountId: "default", chatId: "c1" };
    const file = await outbox.put(Buffer.from("a,b\n1,2\n"), "data.csv");
    expect(file).toMatchObject({ filename: "data.csv", mime: "text/csv", kind: "file", size: 8 });
    const reply = replies.open("r-files", target);
    await reply.push("before");
    await reply.pushFile?.(file, "the data");
    await reply.push("after");
    expect(await reply.end()).toBe(3);
    expect(await reply.settled()).toEqual({ total: 3, delivered: 3, failed: 0 });
    expect(adapter.received).toEqual([
      { text: "before" },
      { file: "data.csv", bytes: "a,b\n1,2\n", caption: "the data" },
      { text: "after" },
    ]);
  });

  it("a caption too long to go with the file is sent first as its own text", async () => {
    const replies = dispatcher("caption");
    const adapter = filePlatform();
    const worker = replies.startDelivery(() => adapter);
    cleanups.push(() => worker.close());
    const target: ReplyTarget = { channel: "files", accountId: "default", chatId: "c2" };
    const file = await outbox.put(Buffer.from("x"), "x.txt");
    const reply = replies.open("r-long-caption", target);
    const caption = "word ".repeat(300).trim();
    await reply.pushFile?.(file, caption);
    const total = await reply.end();
    await reply.settled();
    const texts = adapter.received.slice(0, -1) as Array<{ text: string }>;
    expect(total).toBe(texts.length + 1);
    expect(texts.map((t) => t.text).join(" ")).toBe(caption);
    expect(adapter.received.at(-1)).toEqual({ file: "x.txt", bytes: "x", caption: "" });
  });

  it("a channel without files, or a file gone from the outbox, gets a clear text note in the file's place", async () => {
    const platform = await startFakeChatPlatform();
    cleanups.push(() => platform.close());
    const replies = dispatcher("notes");
    const textOnly = new FakeChatAdapter("fakechat", platform.url);
    const files = filePlatform();
    const worker = replies.startDelivery((channel) => (channel === "files" ? files : textOnly));
    cleanups.push(() => worker.close());
    const file = await outbox.put(Buffer.from("%PDF-1.4"), "report.pdf");
    const plain = replies.open("r-no-files", { channel: "fakechat", accountId: "default", chatId: "c3" });
    await plain.push("here:");
    await plain.pushFile?.(file, "Q3");
    await plain.end();
    expect(await plain.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    expect(platform.messages.map((m) => m.text)).toEqual([
      "here:",
      "Q3\n\n[file: report.pdf, 8 B; not attached: this chat cannot receive files]",
    ]);
    unlinkSync(outbox.pathOf(file.ref));
    const gone = replies.open("r-gone", { channel: "files", accountId: "default", chatId: "c4" });
    await gone.pushFile?.(file);
    await gone.end();
    expect(await gone.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    expect(files.received).toEqual([
      { text: "[file: report.pdf, 8 B; not attached: the file is no longer available]" },
    ]);
  });

  it("a file the platform refuses for good is replaced by a note saying which file did not come and why", async () => {
    const replies = dispatcher("refused");
    const adapter = filePlatform();
    const send = adapter.send;
    adapter.send = async (segment, target) => {
      if (segment.attachment)
        throw new PermanentSendError("Telegram refused the message: Bad Request: IMAGE_PROCESS_FAILED");
      return send(segment, target);
    };
    const worker = replies.startDelivery(() => adapter);
    cleanups.push(() => worker.close());
    const file = await outbox.put(Buffer.from("not really a png"), "chart.png");
    const reply = replies.open("r-refused", { channel: "files", accountId: "default", chatId: "c6" });
    await reply.push("Here is the chart:");
    await reply.pushFile?.(file, "Q3 chart");
    await reply.push("Anything else?");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 3, delivered: 3, failed: 0 });
    expect(adapter.received).toEqual([
      { text: "Here is the chart:" },
      {
        text: "Q3 chart\n\n[file: chart.png, 16 B; not attached: refused by the platform (Telegram refused the message: Bad Request: IMAGE_PROCESS_FAILED)]",
      },
      { text: "Anything else?" },
    ]);
  });

  it("a file's upload gets time for its size on top of the send timeout: a slow upload is sent once", async () => {
    const replies = dispatcher("slow-upload", 400);
    const adapter = filePlatform();
    const send = adapter.send;
    let uploads = 0;
    // 256 KB over 1.2 s: past the 400 ms send timeout, within its upload's time (400 ms + 2 s at 1 Mbit/s).
    adapter.send = async (segment, target, options) => {
      if (segment.attachment) {
        uploads++;
        // As an HTTP upload does: the send's signal aborts it.
        await new Promise((resolve, reject) => {
          const timer = setTimeout(resolve, 1200);
          options?.signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new Error("upload aborted"));
          });
        });
      }
      return send(segment, target);
    };
    const worker = replies.startDelivery(() => adapter);
    cleanups.push(() => worker.close());
    const file = await outbox.put(Buffer.alloc(256 * 1024, 120), "big.txt");
    const reply = replies.open("r-slow", { channel: "files", accountId: "default", chatId: "c7" });
    await reply.pushFile?.(file, "the big one");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 1, delivered: 1, failed: 0 });
    expect(uploads).toBe(1);
  });

  it("a file given up for good is kept with its file, and `hub deliveries retry` sends the file again", async () => {
    const replies = dispatcher("failed");
    const adapter = filePlatform();
    const send = adapter.send;
    let refuse = true;
    // The chat refuses everything (the bot blocked): the file, and the note that would stand in for it.
    adapter.send = async (segment, target) => {
      if (refuse) throw new PermanentSendError("blocked for now");
      return send(segment, target);
    };
    const worker = replies.startDelivery(() => adapter);
    cleanups.push(() => worker.close());
    const file = await outbox.put(Buffer.from("again"), "again.txt");
    const reply = replies.open("r-failed", { channel: "files", accountId: "default", chatId: "c5" });
    await reply.pushFile?.(file, "retry me");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 1, delivered: 0, failed: 1 });
    const redis = createRedis(REDIS_URL);
    cleanups.push(async () => redis.disconnect());
    const failed = new FailedDeliveries(redis, `${prefix}:failed`);
    expect((await failed.list())[0]).toMatchObject({ attachment: { ref: file.ref }, text: "retry me" });
    refuse = false;
    await failed.retry(replies);
    await waitFor(() => adapter.received.length === 1, "the retried file");
    expect(adapter.received).toEqual([{ file: "again.txt", bytes: "again", caption: "retry me" }]);
  });
});
