// The fake chat platform of the delivery benches in a process of its own: a real platform is not on the
// hub's event loop (in the bench's process its HTTP handling was about a quarter of the busy time at
// 1,000 segments/s). The bench asks it over IPC how many messages it has and, at the end, for them.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { PlatformMessage } from "../fakes/src/index.js";

/** A fake chat platform running in a child process. */
export interface PlatformProcess {
  url: string;
  /** How many messages it has accepted so far. */
  count(): Promise<number>;
  /** Every message it has accepted. */
  messages(): Promise<PlatformMessage[]>;
  close(): Promise<void>;
}

/** What the bench asks the platform's process. */
export type PlatformRequest = { id: number; ask: "count" | "messages" };

/** What it answers: its URL once started, then one answer per request. */
export type PlatformAnswer =
  | { url: string }
  | { id: number; count: number }
  | { id: number; messages: PlatformMessage[] };

const CHILD = fileURLToPath(new URL("./platform-child.ts", import.meta.url));

/** Starts the fake chat platform in a child process (killed if this one exits first). */
export async function startPlatformProcess(): Promise<PlatformProcess> {
  const child = fork(CHILD, [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const waiting = new Map<number, { resolve(answer: PlatformAnswer): void; reject(error: Error): void }>();
  let nextId = 0;
  const url = await new Promise<string>((resolve, reject) => {
    child.on("message", (answer: PlatformAnswer) => {
      if ("url" in answer) return resolve(answer.url);
      waiting.get(answer.id)?.resolve(answer);
      waiting.delete(answer.id);
    });
    child.once("exit", (code) => {
      const died = new Error(`the bench's platform process exited (${code})`);
      reject(died);
      // Asks in flight are never answered now: they fail instead of waiting for good.
      for (const ask of waiting.values()) ask.reject(died);
      waiting.clear();
    });
  });
  const ask = (what: PlatformRequest["ask"]) =>
    new Promise<PlatformAnswer>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null)
        return reject(new Error("the bench's platform process has exited"));
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      child.send({ id, ask: what } satisfies PlatformRequest);
    });
  return {
    url,
    count: async () => {
      const answer = await ask("count");
      return "count" in answer ? answer.count : 0;
    },
    messages: async () => {
      const answer = await ask("messages");
      return "messages" in answer ? answer.messages : [];
    },
    close: async () => {
      process.off("exit", killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
