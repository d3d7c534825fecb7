import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AdapterFields, captureLogs, createLogger, type HubLogger, type InboundResult } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { WhatsAppAdapter } from "../src/adapter.js";
import { authDirOf } from "../src/auth-dir.js";
import { clearAuthState } from "../src/auth-state.js";
import { fromJournal, messageJournal, toJournal } from "../src/journal.js";
import { directText, FakeWhatsApp, imageWithCaption } from "./fake-whatsapp.js";

const ALICE = "4915112345678@s.whatsapp.net";
const ALICE_LID = "208123456789013@lid";
const adapters: WhatsAppAdapter[] = [];
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await Promise.all(adapters.splice(0).map((a) => a.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "wa-journal-"));
  dirs.push(dir);
  return dir;
}
const journalFiles = (dir: string): string[] => {
  const at = join(dir, "whatsapp-received", "default");
  return existsSync(at) ? readdirSync(at).map((name) => join(at, name)) : [];
};

/** An adapter on a fake linked device, journaling under `dir`, handing the hub's answers from `admit`. */
async function started(
  dir: string,
  admit: (fields: AdapterFields) => InboundResult | Promise<InboundResult>,
  logger: HubLogger = createLogger({ level: "silent" }),
) {
  const wa = new FakeWhatsApp();
  const adapter = new WhatsAppAdapter({
    connector: wa,
    logger,
    journal: messageJournal(dir, "default"),
    admitRetry: { initialMs: 10, maxMs: 40 },
  });
  adapters.push(adapter);
  await adapter.start(async (fields) => admit(fields));
  await waitFor(() => adapter.status().state === "connected", "connected");
  return { adapter, wa };
}

describe("whatsapp: a received message is kept until the hub takes it (WhatsApp never redelivers)", () => {
  it("a message the hub cannot take yet is tried until it is, kept on disk meanwhile, its chat's next message behind it", async () => {
    const dir = stateDir();
    let down = true;
    const tried: string[] = [];
    const accepted: string[] = [];
    const { wa } = await started(dir, (fields) => {
      tried.push(fields.body);
      if (down) return { kind: "retry", reason: "Redis is unreachable" };
      accepted.push(fields.body);
      return { kind: "accepted" };
    });
    wa.sockets[0]?.upsert([directText(ALICE, "first"), directText(ALICE, "second")]);
    // Well past the 6 tries a message used to get before it was logged as not answered.
    await waitFor(() => tried.length >= 12, "the tries going on", 5000);
    // The chat's second message waits behind its first: never tried ahead of it.
    expect(new Set(tried)).toEqual(new Set(["first"]));
    const [file] = journalFiles(dir);
    const bodies = readFileSync(file as string, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).delivery.message.extendedTextMessage.text);
    expect(bodies).toEqual(["first", "second"]);
    down = false;
    await waitFor(() => accepted.length === 2, "both admitted once Redis is back", 3000);
    expect(accepted).toEqual(["first", "second"]);
    // Both settled: nothing is left on disk.
    expect(journalFiles(dir)).toEqual([]);
  });

  it("a message the hub refuses once it answers is settled, and its log line says it was not taken", async () => {
    const dir = stateDir();
    const { logger, lines } = captureLogs("info");
    let tries = 0;
    const { wa } = await started(
      dir,
      () =>
        ++tries < 3
          ? { kind: "retry", reason: "Redis is unreachable" }
          : { kind: "ignored", reason: "paused" },
      logger,
    );
    wa.sockets[0]?.upsert([directText(ALICE, "hello")]);
    await waitFor(() => lines.some((l) => l.includes("after retries")), "the tries ending");
    const ended = JSON.parse(lines.find((l) => l.includes("after retries")) as string);
    expect(ended).toMatchObject({ tries: 3, outcome: "ignored" });
    expect(ended.msg).toMatch(/the hub did not take it/);
    expect(journalFiles(dir)).toEqual([]);
  });

  it("a /stop the hub cannot take at once waits behind the chat's earlier message, not admitted ahead of it", async () => {
    const dir = stateDir();
    const accepted: string[] = [];
    const tried = new Map<string, number>();
    let release: () => void = () => {};
    const slow = new Promise<void>((resolve) => (release = resolve));
    const { wa } = await started(dir, (fields) => {
      const n = (tried.get(fields.body) ?? 0) + 1;
      tried.set(fields.body, n);
      // Redis fails the first try of each, then the essay's second try is slow (Redis coming back).
      if (n === 1) return { kind: "retry", reason: "Redis is unreachable" };
      return (fields.body === "write an essay" ? slow : Promise.resolve()).then((): InboundResult => {
        accepted.push(fields.body);
        return { kind: "accepted" };
      });
    });
    wa.sockets[0]?.upsert([directText(ALICE, "write an essay")]);
    await waitFor(() => (tried.get("write an essay") ?? 0) >= 2, "the essay's second try under way");
    wa.sockets[0]?.upsert([directText(ALICE, "/stop")]);
    await waitFor(() => tried.has("/stop"), "the /stop tried at once");
    await new Promise((resolve) => setTimeout(resolve, 150));
    release();
    await waitFor(() => accepted.length === 2, "both admitted", 3000);
    // Admitted ahead of the essay, the /stop stopped nothing and the essay ran.
    expect(accepted).toEqual(["write an essay", "/stop"]);
  });

  it("a stop ends a message's tries: none after it, the message left on disk for the next start", async () => {
    const dir = stateDir();
    let tries = 0;
    const { adapter, wa } = await started(dir, () => {
      tries++;
      return { kind: "retry", reason: "Redis is unreachable" };
    });
    wa.sockets[0]?.upsert([directText(ALICE, "sent while Redis was down")]);
    await waitFor(() => tries >= 3, "the tries going on", 3000);
    const before = tries;
    await adapter.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The wait the stop cut short used to end in one more try, while the hub was going down.
    expect(tries).toBe(before);
    expect(journalFiles(dir)).toHaveLength(1);
  });

  /** A receiver process (see journal-receiver.ts) killed after its first try: the id of its message. */
  async function killedReceiver(dir: string, args: string[]): Promise<string> {
    const script = fileURLToPath(new URL("./journal-receiver.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script, dir, ...args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    let output = "";
    child.stdout?.on("data", (d: Buffer) => {
      output += String(d);
    });
    await waitFor(() => output.includes("trying"), "the receiver's first try", 20_000);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    expect(journalFiles(dir)).toHaveLength(1);
    return output.trim().split(" ")[1] as string;
  }

  it("a message a killed process received and never admitted is admitted by the next start", async () => {
    const dir = stateDir();
    const messageId = await killedReceiver(dir, [ALICE, "sent while Redis was down"]);

    const admitted: AdapterFields[] = [];
    const { adapter } = await started(dir, (fields) => {
      admitted.push(fields);
      return { kind: "accepted" };
    });
    await waitFor(() => admitted.length === 1, "the journaled message admitted", 3000);
    expect(admitted[0]).toMatchObject({
      body: "sent while Redis was down",
      chat: { type: "direct", id: ALICE },
      messageId,
    });
    await waitFor(() => journalFiles(dir).length === 0, "the dead process's journal gone");
    expect(adapter.status().state).toBe("connected");
  });

  it("a journaled message from a LID sender is admitted from the phone JID beside it, as it was live", async () => {
    // baileys puts the sender's phone JID beside a LID in the key (remoteJidAlt, participantAlt): no
    // protobuf field, so a journal keeping only the protobuf JSON lost it, and the message was admitted
    // from the LID (not on a phone-number allowlist, not the sender's session).
    const dir = stateDir();
    const messageId = await killedReceiver(dir, [ALICE_LID, "sent while Redis was down", ALICE]);
    const admitted: AdapterFields[] = [];
    await started(dir, (fields) => {
      admitted.push(fields);
      return { kind: "accepted" };
    });
    await waitFor(() => admitted.length === 1, "the journaled message admitted", 3000);
    expect(admitted[0]).toMatchObject({
      messageId,
      chat: { type: "direct", id: ALICE_LID },
      sender: { id: ALICE },
    });
  });

  it("a logout, which clears the account's credentials folder, leaves the messages not admitted yet", async () => {
    const dir = stateDir();
    const journal = messageJournal(dir, "default");
    journal.record(toJournal(directText(ALICE, "sent as the phone logged the device out")));
    await clearAuthState(authDirOf(dir, "default"));
    expect(journalFiles(dir)).toHaveLength(1);
  });

  it("a journaled message reads back as the socket delivered it: media key as bytes, ids, timestamp", () => {
    const image = imageWithCaption(ALICE, "look");
    // Through the disk's form: JSON text.
    const back = fromJournal(JSON.parse(JSON.stringify(toJournal(image))));
    const key = back.message?.imageMessage?.mediaKey;
    expect(key).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(key as Uint8Array).toString()).toBe("0123456789abcdef0123456789abcdef");
    expect(back.key).toMatchObject({ remoteJid: ALICE, id: image.key?.id, fromMe: false });
    expect(Number(back.messageTimestamp)).toBe(Number(image.messageTimestamp));
    expect(back.message?.imageMessage?.caption).toBe("look");
  });
});
