import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, type OutboundAttachment, RateLimitedError, type ReplyTarget } from "@hub/core";
import { type FakeSlack, startFakeSlack } from "@hub/fakes";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { SlackAdapter } from "../src/index.js";
import { memoryState, SLACK_IDS } from "./harness.js";

const dir = mkdtempSync(join(tmpdir(), "hub-slack-files-"));
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function attachment(name: string, text: string): OutboundAttachment {
  const path = join(dir, name);
  writeFileSync(path, text);
  return { path, filename: name, mime: "text/plain", kind: "file", size: Buffer.byteLength(text) };
}

async function setup(uncertainSettleMs = 1500): Promise<{ fake: FakeSlack; adapter: SlackAdapter }> {
  const fake = await startFakeSlack();
  const adapter = new SlackAdapter({
    botToken: fake.botToken,
    signingSecret: fake.signingSecret,
    appToken: fake.appToken,
    apiUrl: fake.apiUrl,
    state: memoryState(),
    logger: createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" }),
    uncertainSettleMs,
  });
  await adapter.start(async () => ({ kind: "accepted" }));
  cleanups.push(async () => {
    await adapter.stop();
    await fake.close();
  });
  return { fake, adapter };
}

const dmTarget: ReplyTarget = { channel: "slack", accountId: "default", chatId: SLACK_IDS.directChat };

describe("slack files", () => {
  it("uploads in three steps (URL, bytes, complete) and shares the file with its caption in the thread", async () => {
    const { fake, adapter } = await setup();
    const channelTarget: ReplyTarget = {
      ...dmTarget,
      chatId: "C0CHANNEL1",
      replyToMessageId: "1700000000.000100",
    };
    await adapter.send(
      { replyId: "r", index: 0, text: "**notes**", attachment: attachment("n.txt", "hello") },
      channelTarget,
    );
    expect(fake.calls.map((c) => c.method)).toEqual(
      expect.arrayContaining(["files.getUploadURLExternal", "files.completeUploadExternal"]),
    );
    expect(fake.callsOf("files.getUploadURLExternal")[0]?.params).toMatchObject({
      filename: "n.txt",
      length: "5",
    });
    const [posted] = fake.posted("C0CHANNEL1");
    expect(posted).toMatchObject({ text: "*notes*", thread_ts: "1700000000.000100" });
    expect(posted?.files?.map((f) => [f.name, f.data?.toString()])).toEqual([["n.txt", "hello"]]);
  });

  it("never shares a file twice when a slow completeUploadExternal lands after the client gave up", async () => {
    const { fake, adapter } = await setup();
    fake.slowNext("files.completeUploadExternal", 800);
    const segment = { replyId: "slow-file", index: 0, text: "once", attachment: attachment("once.txt", "x") };
    const aborted = await adapter
      .send(segment, dmTarget, { signal: AbortSignal.timeout(300) })
      .catch((e) => e);
    expect(aborted).toBeInstanceOf(Error);
    // The retry right away waits for the uncertain share to settle.
    const early = await adapter.send(segment, dmTarget).catch((e) => e);
    expect(early).toBeInstanceOf(RateLimitedError);
    await waitFor(() => fake.posted().length === 1, "the slow share to land");
    await new Promise((r) => setTimeout(r, (early as RateLimitedError).retryAfterMs));
    const result = await adapter.send(segment, dmTarget);
    const posted = fake.posted();
    expect(posted).toHaveLength(1);
    expect(result.messageId).toBe(posted[0]?.ts);
    expect(fake.callsOf("files.completeUploadExternal")).toHaveLength(1);
    // The next segment posts normally.
    await adapter.send({ replyId: "slow-file", index: 1, text: "next" }, dmTarget);
    expect(fake.posted().map((m) => m.text)).toEqual(["once", "next"]);
  });
});
