import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckJournal, createLogger, type InboundResult } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { admitJournaled, type EventsRouteOptions, SlackEnvelopeSchema } from "../src/events-http.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A journal holding one acknowledged, unadmitted event, and route options whose admission is `process`. */
function journaled(process: () => Promise<InboundResult>) {
  const dir = mkdtempSync(join(tmpdir(), "slack-events-http-"));
  dirs.push(dir);
  const journal = new AckJournal(join(dir, "acked"), SlackEnvelopeSchema);
  const delivery = { body: { type: "event_callback", event_id: "Ev0LATE" } };
  const key = journal.record(delivery);
  const stop = new AbortController();
  const options: EventsRouteOptions = {
    path: "/slack/events",
    signingSecret: "s",
    logger: createLogger({ level: "silent" }),
    process,
    lateRetry: { initialMs: 5, maxMs: 10 },
    journal,
    stopped: stop.signal,
  };
  const file = () => join(dir, "acked", readdirSync(join(dir, "acked"))[0] as string);
  return { journal, options, stop, file, start: () => admitJournaled(options, [{ key, delivery }]) };
}

describe("an acknowledged event's admission after its ack", () => {
  it("is tried past any fixed number of tries, keeps its journal looking alive, and is settled once admitted", async () => {
    let tries = 0;
    const { file, start } = journaled(async () =>
      ++tries <= 20 ? { kind: "retry", reason: "Redis down" } : { kind: "accepted" },
    );
    const path = file();
    // Last written ten minutes ago, as an orphan's would be: the tries move its time on.
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(path, old, old);
    start();
    await waitFor(() => tries >= 5, "the tries to go on");
    expect(Date.now() - statSync(path).mtimeMs).toBeLessThan(60_000);
    expect(readFileSync(path, "utf8")).not.toContain("settled");
    await waitFor(() => tries === 21, "the admission to take");
    await waitFor(() => readdirSync(join(path, "..")).length === 0, "the record settled");
  });

  it("ends with the adapter's stop, leaving the record for the next start", async () => {
    let tries = 0;
    const { stop, file, start } = journaled(async () => {
      tries++;
      return { kind: "retry", reason: "Redis down" };
    });
    start();
    await waitFor(() => tries >= 3, "a few tries");
    stop.abort();
    await new Promise((r) => setTimeout(r, 20));
    const atStop = tries;
    await new Promise((r) => setTimeout(r, 150));
    expect(tries).toBe(atStop);
    expect(readFileSync(file(), "utf8")).toContain("Ev0LATE");
    expect(readFileSync(file(), "utf8")).not.toContain("settled");
  });
});
