import type { FakeOpenAI } from "@hub/fakes";
import { expect, it } from "vitest";
import { waitFor } from "../../support/redis.js";
import type { ConformanceHarness } from "./harness.js";

/** The mark a live preview shows after its text while the answer is being written. */
const PREVIEW_MARK = "…";

/** The hub config a harness's live cases need: previews where it edits, the reaction where it reacts. */
export function liveConfig(h: ConformanceHarness): Record<string, unknown> {
  return {
    ...(h.shown ? { streaming: "preview" } : {}),
    ...(h.reactionsOn ? { ackReaction: "👀" } : {}),
  };
}

/** A numbered answer long enough to need several messages, streamed slowly enough to be previewed. */
function slowAnswer(paragraphs: number): string {
  return Array.from(
    { length: paragraphs },
    (_, i) => `Part ${String(i).padStart(2, "0")}: ${"the answer grows while you watch, ".repeat(5).trim()}`,
  ).join("\n\n");
}

/**
 * The conformance cases of live features, per capability: a preview edited in place and then finalized
 * into the ordered answer, with no edit after the final text; the acknowledgement reaction added while
 * the run works and removed when it ends.
 */
export function describeLiveCases(h: ConformanceHarness, model: () => FakeOpenAI): void {
  (h.shown ? it : it.skip)(
    "streams a long answer as a preview edited in place, then finalizes it, with no edit after the final text",
    async () => {
      const shown = () => h.shown?.(h.ids.directChat) ?? [];
      const answer = slowAnswer(40);
      // About 6 s of streaming: several preview updates at the channel's pace.
      model().script({ text: answer, chunkSize: 40, delayMs: 40 });
      const before = shown().length;
      await h.direct("write slowly please");
      await waitFor(
        () =>
          shown()
            .slice(before)
            .some((m) => m.text.includes(PREVIEW_MARK)),
        "a live preview",
        15_000,
      );
      const done = () => {
        const mine = shown().slice(before);
        return (
          mine.some((m) => m.text.includes("Part 39")) && !mine.some((m) => m.text.includes(PREVIEW_MARK))
        );
      };
      await waitFor(done, "the finalized answer", 30_000);
      const edits = () =>
        shown()
          .slice(before)
          .reduce((n, m) => n + m.edits, 0);
      const finalEdits = edits();
      // Longer than any preview interval: an edit queued behind the final text would have landed.
      await new Promise((r) => setTimeout(r, 2500));
      const final = shown().slice(before);
      expect(edits()).toBe(finalEdits);
      expect(final.some((m) => m.edits >= 2)).toBe(true);
      for (const m of final) {
        expect(m.text.length).toBeLessThanOrEqual(h.textLimit);
        expect(m.wellFormed).toBe(true);
      }
      const parts = final.flatMap((m) => [...m.text.matchAll(/Part (\d\d)/g)].map((x) => Number(x[1])));
      const seen = shown().map((m) => `${m.text.slice(0, 12)}…${m.text.length} (${m.edits} edits)`);
      expect(parts, `before=${before}; shown: ${seen.join(" | ")}`).toEqual(
        Array.from({ length: 40 }, (_, i) => i),
      );
    },
    60_000,
  );

  (h.shown && h.supportsGroups !== false ? it : it.skip)(
    "a long previewed answer in a group: every part where the first is (its thread), only the first a reply",
    async () => {
      const shown = () => h.shown?.(h.ids.group) ?? [];
      model().script({ text: slowAnswer(40), chunkSize: 40, delayMs: 40 });
      const before = shown().length;
      await h.group("write slowly please", { mention: true });
      const done = () => {
        const mine = shown().slice(before);
        return (
          mine.some((m) => m.text.includes("Part 39")) && !mine.some((m) => m.text.includes(PREVIEW_MARK))
        );
      };
      await waitFor(done, "the finalized answer", 40_000);
      const final = shown().slice(before);
      expect(final.length).toBeGreaterThan(1);
      // A part that left the first one's thread (Slack: posted at the channel's top) is lost to the reader.
      for (const m of final) expect(m.threadId).toBe(final[0]?.threadId);
      // A reply platform marks only the first part as the reply; a thread platform, every part of the thread.
      const replies = final.filter((m) => m.replyToMessageId !== undefined).length;
      expect([1, final.length]).toContain(replies);
    },
    60_000,
  );

  (h.reactionsOn ? it : it.skip)(
    "acknowledges a message with a reaction while the run works and removes it when the run ends",
    async () => {
      model().script({ text: "Took a moment. Done.", chunkSize: 4, delayMs: 150 });
      const ref = await h.direct("react to this");
      await waitFor(
        () => h.reactionsOn?.(ref).includes("👀") === true,
        "the acknowledgement reaction",
        10_000,
      );
      await waitFor(
        () => h.outbound(h.ids.directChat).some((m) => m.text === "Took a moment. Done."),
        "the answer",
        15_000,
      );
      await waitFor(() => h.reactionsOn?.(ref).length === 0, "the reaction removed", 10_000);
    },
    30_000,
  );
}
