import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, type HubProcess, startHubProcess } from "../../../test/support/hub-process.js";
import { testPrefix, waitFor } from "../../../test/support/redis.js";
import { hasRedisServer, type OwnRedis, startOwnRedis } from "../../../test/support/redis-server.js";
import { directText } from "./fake-whatsapp.js";

// The journal at the level of the whole hub: real `hub start` processes (adapters/whatsapp/test/fake-hub.ts
// runs apps/hub/src/main.ts with only the WhatsApp connection fake) on a Redis of the test's own.
const FAKE_HUB = fileURLToPath(new URL("./fake-hub.ts", import.meta.url));
const ANN = "4915112345678@s.whatsapp.net";
const BEN = "4915187654321@s.whatsapp.net";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Sent {
  jid: string;
  id: string;
  text: string;
  resent: boolean;
}

/** Every send the fake WhatsApp of these processes took, in order, read from their output. */
function sentBy(hubs: HubProcess[]): Sent[] {
  return hubs.flatMap((hub) =>
    [...hub.output.join("").matchAll(/^fake-whatsapp sent (.*)$/gm)].map(
      (m) => JSON.parse(m[1] ?? "") as Sent,
    ),
  );
}

/** What each answer said it answered (the offline model's first line, `You said: <text>`). */
const answered = (sent: Sent[], jid: string) =>
  sent.filter((s) => s.jid === jid).map((s) => /^You said: (.*)$/m.exec(s.text)?.[1] ?? s.text);

async function controlPort(hub: HubProcess): Promise<number> {
  await hub.waitForOutput(/fake-whatsapp control \d+/);
  return Number(/fake-whatsapp control (\d+)/.exec(hub.output.join(""))?.[1]);
}

/** Messages the journal holds: recorded (`acked`) and not settled, over every process's file. */
function journaled(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  const open = new Set<string>();
  for (const name of names)
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      if (!line) continue;
      const parsed = JSON.parse(line) as { acked?: string; settled?: string };
      if (parsed.acked) open.add(`${name}/${parsed.acked}`);
      if (parsed.settled) open.delete(`${name}/${parsed.settled}`);
    }
  return open.size;
}

describe.skipIf(!hasRedisServer())(
  "WhatsApp messages received while Redis is down, then the hub killed",
  () => {
    it("are each answered exactly once, in each chat's order, by the next hub process on the same state directory", async () => {
      const redis: OwnRedis = await startOwnRedis();
      const stateDir = mkdtempSync(join(tmpdir(), "hub-wa-journal-"));
      cleanups.push(async () => {
        await redis.stop();
        rmSync(stateDir, { recursive: true, force: true });
      });
      const config = join(stateDir, "hub.json5");
      writeFileSync(
        config,
        JSON.stringify({
          channels: {
            whatsapp: { dmPolicy: "allowlist", allowFrom: [ANN, BEN], sendIntervalMs: 0, leaseMs: 3000 },
          },
          // Followup: each message is its own run (steer would fold a chat's later messages into one answer).
          agent: { offlineTokenDelayMs: 0, queueMode: "followup" },
        }),
      );
      const env = {
        REDIS_URL: redis.url,
        HUB_STATE_DIR: stateDir,
        HUB_CONFIG: config,
        HUB_REDIS_PREFIX: testPrefix("wa-journal"),
        HUB_GATEWAY_TOKEN: "wa-journal-token-0123456789abcdef",
      };
      const hubs: HubProcess[] = [];
      const start = async () => {
        const hub = await startHubProcess(env, await freePort(), { main: FAKE_HUB });
        hubs.push(hub);
        cleanups.push(() => hub.kill());
        return hub;
      };

      const first = await start();
      await first.waitForOutput(/"msg":"whatsapp connected"/);
      const control = await controlPort(first);
      await redis.down();
      // Two chats, three messages each, arriving interleaved as WhatsApp delivers them (one upsert each).
      const said: Record<string, string[]> = {
        [ANN]: ["ann 1", "ann 2", "ann 3"],
        [BEN]: ["ben 1", "ben 2", "ben 3"],
      };
      for (let i = 0; i < 3; i++)
        for (const jid of [ANN, BEN]) {
          const message = directText(jid, said[jid]?.[i] ?? "");
          const res = await fetch(`http://127.0.0.1:${control}/upsert`, {
            method: "POST",
            body: JSON.stringify({ messages: [message.toJSON()] }),
          });
          expect(res.status).toBe(204);
        }
      const journal = join(stateDir, "whatsapp-received", "default");
      await waitFor(() => journaled(journal) === 6, "the six messages in the journal", 10_000);
      // The hub's admission of the chats' first messages waits on Redis (the later ones wait behind them).
      await first.waitForOutput(/cannot reach Redis/);
      await new Promise((r) => setTimeout(r, 1000));
      await first.kill();
      expect(sentBy([first])).toEqual([]);

      // Redis comes back as a restarted server does: its data directory and AOF kept (the deployment's
      // docker-compose runs it so; the dead process's account lease is in there too, until it expires).
      await redis.up();
      const second = await start();
      const all = () => sentBy(hubs);
      await waitFor(() => all().length >= 6, "six answers", 30_000);
      // Time for a duplicate to show.
      await new Promise((r) => setTimeout(r, 1500));
      expect(all().filter((s) => s.resent)).toEqual([]);
      expect(answered(all(), ANN)).toEqual(said[ANN]);
      expect(answered(all(), BEN)).toEqual(said[BEN]);
      expect(second.output.join("")).toMatch(
        /"count":6,"msg":"whatsapp: admitting messages an earlier process received and never admitted"/,
      );
      // Everything admitted: nothing is left for a third process.
      expect(journaled(journal)).toBe(0);
    }, 90_000);
  },
);
