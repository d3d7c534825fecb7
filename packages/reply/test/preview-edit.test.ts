// A live preview whose edits keep failing with an error that is not a refusal (Slack's `fatal_error` on
// every `chat.update`, a code the adapter does not know): the segment taking the preview over must still
// reach the chat, as a message of its own, rather than use up its tries on the edit and be given up.
import {
  type ChannelCapabilities,
  type OutboundSegment,
  PermanentSendError,
  type ReplyTarget,
} from "@hub/core";
import { afterAll, describe, expect, it } from "vitest";
import { FakeChatAdapter, startFakeChatPlatform } from "../../../test/fakes/src/index.js";
import { dropPrefix, testPrefix, waitFor } from "../../../test/support/redis.js";
import { plainTextDispatcher } from "./dispatcher-kit.js";

const prefix = testPrefix("preview-edit");
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await dropPrefix(prefix);
});

const EDITING: ChannelCapabilities = {
  textLimit: 200,
  markdown: "plain",
  threads: false,
  typing: false,
  edit: true,
};

/** The fake chat platform's adapter, with edits and deletes that the platform answers with `editError`. */
class FailingEditsAdapter extends FakeChatAdapter {
  override readonly capabilities = EDITING;
  readonly edits: string[] = [];
  readonly deleted: string[] = [];
  constructor(
    url: string,
    private readonly editError: () => Error,
  ) {
    super("fakechat", url);
  }
  async edit(messageId: string, segment: OutboundSegment): Promise<void> {
    this.edits.push(`${messageId}:${segment.text}`);
    throw this.editError();
  }
  async deleteMessage(_target: ReplyTarget, messageId: string): Promise<void> {
    this.deleted.push(messageId);
  }
}

describe("a segment taking over a live preview it cannot edit", () => {
  it.each([
    ["an error the adapter does not know (retried)", () => new Error("Slack answered fatal_error")],
    ["a refusal", () => new PermanentSendError("Slack refused the message: cant_update_message")],
  ])(
    "%s: the preview is deleted and the segment sent as a message of its own",
    async (_, editError) => {
      const platform = await startFakeChatPlatform();
      cleanups.push(() => platform.close());
      const replies = plainTextDispatcher(prefix, { maxAttempts: 4, capabilitiesOf: () => EDITING });
      cleanups.push(() => replies.close());
      const adapter = new FailingEditsAdapter(platform.url, editError);
      const worker = replies.startDelivery(() => adapter, { concurrency: 2 });
      cleanups.push(() => worker.close());
      const chatId = `chat-${platform.url.split(":").at(-1)}`;
      const target: ReplyTarget = { channel: "fakechat", accountId: "default", chatId };
      const reply = replies.open(`run-${chatId}`, target, {
        runId: `run-${chatId}`,
        preview: { key: `run-${chatId}` },
      });
      await reply.preview?.("The answer so far");
      await waitFor(() => platform.messages.length === 1, "the preview");
      await reply.push("The whole answer.", undefined, { last: true });
      await reply.end();
      expect(await reply.settled()).toMatchObject({ total: 1, delivered: 1, failed: 0 });
      expect(platform.messages.map((m) => m.text)).toEqual([
        expect.stringContaining("The answer so far"),
        "The whole answer.",
      ]);
      expect(adapter.deleted).toEqual(["1"]);
      // Within half of its tries.
      expect(adapter.edits.length).toBeLessThanOrEqual(2);
    },
    30_000,
  );
});
