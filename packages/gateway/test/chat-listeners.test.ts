import { type ChatEvent, createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { ChatEventBus } from "../src/index.js";

// Two processes' buses on one Redis (each with its own connections, as two hub processes have): one runs a
// gateway, the other publishes a run's end. What reaches the chat-events channel is read by a plain subscriber.
const logger = createLogger({ level: "silent" });
const TIMING = { heartbeatMs: 200, expiryMs: 600 };
const connections: Redis[] = [];
const buses: ChatEventBus[] = [];
const connect = () => {
  const redis = new Redis(REDIS_URL);
  connections.push(redis);
  return redis;
};
afterEach(() => {
  // Their heartbeats and echoes stop too.
  for (const bus of buses.splice(0)) bus.listeners.close();
  for (const c of connections.splice(0)) c.disconnect();
});

const event = (runId: string): ChatEvent => ({
  runId,
  sessionKey: "agent:main:telegram:direct:42",
  seq: 1,
  state: "final",
  text: "done",
});

// A bus as a hub process has one: its command connection, and listening on its own subscriber connection.
async function processBus(prefix: string): Promise<ChatEventBus & { commands: Redis; subscriber: Redis }> {
  const commands = connect();
  const subscriber = connect();
  const bus = new ChatEventBus(commands, prefix, logger, TIMING);
  buses.push(bus);
  await bus.listen(subscriber);
  return Object.assign(bus, { commands, subscriber });
}

// A process's bus that has listened long enough to be sure nobody listens.
async function sureNobodyListens(name: string): Promise<ChatEventBus & { subscriber: Redis }> {
  const runner = await processBus(testPrefix(name));
  await sure();
  expect(runner.listeners.any).toBe(false);
  return runner;
}

// The run ids published on the chat-events channel from now on.
async function published(prefix: string): Promise<string[]> {
  const seen: string[] = [];
  const subscriber = connect();
  subscriber.on("message", (_channel: string, message: string) => seen.push(JSON.parse(message).runId));
  await subscriber.subscribe(`${prefix}:chat-events`);
  return seen;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Long enough for a published event to have arrived.
const settle = () => pause(100);
// Until the gateways could have answered the bus's question (see ChatListeners): from then on it is sure.
const sure = () => pause(TIMING.heartbeatMs + 1100);

describe("chat events are published only while a web client may hear them", () => {
  it("publishes while unsure, not once sure nobody listens, again once a gateway has a client, not after it left", async () => {
    const prefix = testPrefix("chat-listeners");
    const seen = await published(prefix);
    const gateway = await processBus(prefix);
    const runner = await processBus(prefix);
    // Just listening: a gateway with clients may not have said so yet.
    await runner.publish(event("unsure"));
    await sure();
    await runner.publish(event("nobody"));
    gateway.listeners.clientsHere(1);
    await waitFor(() => runner.listeners.any, "the gateway's announcement");
    await runner.publish(event("heard"));
    // Its own client: the gateway's process knows without an announcement.
    await gateway.publish(event("heard here"));
    // Heartbeats keep it so past the expiry of one announcement.
    await pause(TIMING.expiryMs + 200);
    await runner.publish(event("still heard"));
    gateway.listeners.clientsHere(0);
    await waitFor(() => !runner.listeners.any, "the gateway's last client gone");
    await runner.publish(event("gone"));
    await gateway.publish(event("gone here"));
    await settle();
    expect(seen).toEqual(["unsure", "heard", "heard here", "still heard"]);
  });

  it("asks when it begins to listen: a gateway whose clients connected before hears the question and answers", async () => {
    const prefix = testPrefix("chat-listeners-ask");
    // Its heartbeat would come only in a minute: only its answer to the question can tell.
    const slow = { heartbeatMs: 60_000, expiryMs: 180_000 };
    const gatewayCommands = connect();
    const gateway = new ChatEventBus(gatewayCommands, prefix, logger, slow);
    buses.push(gateway);
    await gateway.listen(connect());
    gateway.listeners.clientsHere(1);
    await settle();
    const runner = await processBus(prefix);
    await sure();
    expect(runner.listeners.any).toBe(true);
    gateway.listeners.clientsHere(0);
    await waitFor(() => !runner.listeners.any, "the gateway's last client gone");
  });

  it("forgets a gateway that died with clients once its last heartbeat expires", async () => {
    const prefix = testPrefix("chat-listeners-dead");
    const seen = await published(prefix);
    const gateway = await processBus(prefix);
    const runner = await processBus(prefix);
    await sure();
    gateway.listeners.clientsHere(2);
    await waitFor(() => runner.listeners.any, "the gateway's announcement");
    // Dies without a word: its heartbeat stops (its connection goes with it).
    gateway.commands.disconnect();
    await pause(TIMING.expiryMs + 300);
    expect(runner.listeners.any).toBe(false);
    await runner.publish(event("after the death"));
    await settle();
    expect(seen).toEqual([]);
  });

  it("is unsure again after its subscriber connection came back: announcements may have been lost", async () => {
    const runner = await sureNobodyListens("chat-listeners-reconnect");
    const { subscriber } = runner;
    const closed = new Promise((r) => subscriber.once("close", r));
    const back = new Promise((r) => subscriber.once("ready", r));
    subscriber.disconnect(true);
    await closed;
    // Down: announcements made now are lost.
    expect(runner.listeners.any).toBe(true);
    await back;
    expect(runner.listeners.any).toBe(true);
    // Sure again once a heartbeat could have come after the resubscription, which a loaded machine delays
    // (its echoes unheard meanwhile keep it unsure): waited for, not timed.
    await waitFor(() => !runner.listeners.any, "sure again after the reconnect", 10_000);
  });

  it("is unsure while its subscription lapsed without a word: its own echo does not come back", async () => {
    const runner = await sureNobodyListens("chat-listeners-lapse");
    const { subscriber } = runner;
    // The connection stays up (no close, no ready): only the echo tells.
    await subscriber.unsubscribe(runner.listeners.channel);
    await waitFor(() => runner.listeners.any, "the lapse noticed", 3 * TIMING.heartbeatMs);
    await subscriber.subscribe(runner.listeners.channel);
    // Its echo back: still unsure for a heartbeat (what it missed meanwhile is told again by then).
    await pause(2 * TIMING.heartbeatMs);
    expect(runner.listeners.any).toBe(true);
    await sure();
    expect(runner.listeners.any).toBe(false);
  });
});
