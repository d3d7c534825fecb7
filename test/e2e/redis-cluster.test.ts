import { offlineAnswer } from "@hub/agent";
import { createRedis, readyCount } from "@hub/queue";
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeTelegram, privateText, startFakeTelegram } from "../fakes/src/index.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";
import { type OwnRedisCluster, startRedisCluster } from "../support/redis-server.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// Scale-out (issue 16): the hub runs unchanged on a Redis Cluster. Every key carries the prefix's hash
// tag, so every script and multi-key command touches one slot; the hub connects with ioredis's
// Cluster client when REDIS_URL lists several nodes.
let cluster: OwnRedisCluster;
let telegram: FakeTelegram;
let inst: Installation;
let client: Cluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
  telegram = await startFakeTelegram();
  client = new Cluster(cluster.ports.map((port) => ({ host: "127.0.0.1", port })));
}, 60_000);
afterAll(async () => {
  await inst?.dispose();
  client?.disconnect();
  await telegram?.close();
  await cluster?.stop();
});

describe("the hub on a 3-node Redis Cluster", () => {
  it("answers the web chat and a Telegram message, every key in the installation's one slot", async () => {
    const chat = 9901;
    // Plain, as the default `hub` is: the hub adds the hash tag itself (the cluster is this test's own).
    const prefix = `cluster-${Date.now().toString(36)}`;
    inst = installation("cluster", {
      prefix,
      env: { REDIS_URL: cluster.url },
      config: {
        channels: {
          telegram: fakeTelegramChannel(telegram, [chat]),
        },
      },
    });
    const { client: gateway } = await inst.start();
    const res = await gateway!.request("chat.send", {
      text: "hello cluster",
      idempotencyKey: "cluster-run-0001",
    });
    expect(res.payload).toMatchObject({ runId: "cluster-run-0001", status: "accepted" });
    const final = await gateway!.terminal("cluster-run-0001", 30_000);
    expect(final).toMatchObject({ state: "final", text: offlineAnswer("hello cluster") });

    telegram.pushUpdate(
      privateText({ chatId: chat, fromId: chat, text: "hello from telegram", messageId: 77 }),
    );
    await waitFor(() => telegram.sent(chat).length === 1, "the Telegram answer", 30_000);
    expect(String(telegram.sent(chat)[0]?.text)).toContain("hello from telegram");

    // The installation's keys live on the cluster, all in the slot of the prefix's hash tag.
    const keys: string[] = [];
    for (const node of client.nodes("master")) keys.push(...(await node.keys(`{${prefix}}:*`)));
    expect(keys.length).toBeGreaterThan(10);
    const slots = new Set(await Promise.all(keys.map((k) => client.cluster("KEYSLOT", k))));
    expect(slots.size).toBe(1);
    expect(keys.some((k) => k.includes(":run:cluster-run-0001"))).toBe(true);
    for (const node of client.nodes("master")) expect(await node.keys(`${prefix}:*`)).toEqual([]);

    // Its claims' clock (see generationBase) is read on the node that holds those keys, and on no other.
    for (const node of client.nodes("master")) {
      const holds = (await node.keys(`{${prefix}}:*`)).length > 0;
      const readTime = /^cmdstat_time:calls=[1-9]/m.test(await node.info("commandstats"));
      expect(readTime).toBe(holds);
    }
  }, 90_000);

  it("takes a node's connection dropped for the connection's reconnect (what drops kept sessions and cached transcripts)", async () => {
    const connection = createRedis(cluster.url);
    try {
      await waitFor(() => connection.status === "ready", "the cluster connection", 10_000);
      const ready = readyCount(connection);
      const [node] = (connection as unknown as Cluster).nodes("master");
      await node?.ping();
      // The node's connection drops, as when its Redis restarts or is restored: the cluster drops the node.
      node?.disconnect(true);
      await waitFor(() => ready.count > 0, "the node ready again", 10_000);
    } finally {
      connection.disconnect();
    }
  }, 30_000);
});
