// `npm run bench -- breakdown` (or `tsx test/bench/breakdown.ts`): where the hub's Redis commands per
// message go. Runs the end-to-end Telegram load on a private Redis under MONITOR and prints, per
// inbound message, each script (named by its file) with the commands it ran inside, and each plain
// command, most first. A diagnostic for the speed work; it asserts nothing.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { startBenchRedis } from "./meter.js";
import { startBenchHub } from "./telegram.js";
import { driveChats } from "./telegram-load.js";

// Every Lua file of the repository by its SHA1, alone and behind any of the shared functions (scriptWith's order).
function scriptNames(root: string): Map<string, string> {
  const names = new Map<string, string>();
  const shared = ["token-bucket", "owe-drain", "ack-next"].map((name) =>
    readFileSync(join(root, `packages/queue/src/commands/${name}.lua`), "utf8"),
  );
  // Every ordered subset of the shared functions, as scriptWith joins them.
  const prefixes: string[][] = [[]];
  for (const fn of shared) for (const set of [...prefixes]) prefixes.push([...set, fn]);
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".lua")) {
        const text = readFileSync(path, "utf8");
        const name = path.slice(root.length + 1).replace(/\/src\//, ":");
        for (const prefix of prefixes)
          names.set(
            createHash("sha1")
              .update([...prefix, text].join("\n"))
              .digest("hex"),
            name,
          );
      }
    }
  };
  for (const top of ["packages", "adapters", "apps"]) walk(join(root, top));
  return names;
}

/** Tallies MONITOR lines: a script's inner commands (source "lua") go to the script that ran them. */
class Tally {
  readonly scripts = new Map<string, { calls: number; inner: Map<string, number> }>();
  readonly plain = new Map<string, number>();
  // The length of each call's MONITOR line (about what the hub sent for it: MONITOR quotes and escapes), by
  // script or command.
  readonly sent = new Map<string, number>();
  #current: { calls: number; inner: Map<string, number> } | undefined;

  constructor(readonly names: Map<string, string>) {}

  line(text: string): void {
    const m = /^[\d.]+ \[\d+ ([^\]]+)\] "([^"]+)"(?: "([^"]*)")?/.exec(text);
    if (!m) return;
    const [, source, command, first] = m;
    const name = (command ?? "").toLowerCase();
    if (source === "lua") {
      if (this.#current) this.#current.inner.set(name, (this.#current.inner.get(name) ?? 0) + 1);
      return;
    }
    if (name === "evalsha" || name === "eval") {
      const sha = name === "evalsha" ? (first ?? "") : "";
      const script =
        this.names.get(sha) ?? (name === "eval" ? "(eval with text)" : `(sha ${sha.slice(0, 8)})`);
      const entry = this.scripts.get(script) ?? { calls: 0, inner: new Map() };
      entry.calls++;
      this.scripts.set(script, entry);
      this.#current = entry;
      this.sent.set(script, (this.sent.get(script) ?? 0) + text.length);
      return;
    }
    this.#current = undefined;
    this.plain.set(name, (this.plain.get(name) ?? 0) + 1);
    this.sent.set(name, (this.sent.get(name) ?? 0) + text.length);
  }

  print(messages: number): void {
    const per = (n: number) => (n / messages).toFixed(2);
    const rows = [...this.scripts].map(([script, e]) => {
      const inner = [...e.inner.values()].reduce((a, b) => a + b, 0);
      return { script, total: e.calls + inner, e };
    });
    rows.sort((a, b) => b.total - a.total);
    let total = 0;
    for (const { script, total: t, e } of rows) {
      total += t;
      const inner = [...e.inner].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${per(n)}`);
      console.log(`  ${per(t).padStart(6)}  ${script} ×${per(e.calls)}: ${inner.join(", ")}`);
    }
    for (const [command, n] of [...this.plain].sort((a, b) => b[1] - a[1])) {
      total += n;
      console.log(`  ${per(n).padStart(6)}  ${command}`);
    }
    console.log(`  ${per(total).padStart(6)}  in all`);
    const sent = [...this.sent].sort((a, b) => b[1] - a[1]);
    const bytes = sent.reduce((a, [, n]) => a + n, 0);
    console.log(
      `Bytes sent to Redis per inbound message (MONITOR's line lengths): ${Math.round(bytes / messages)}`,
    );
    for (const [name, n] of sent.slice(0, 12))
      console.log(`  ${String(Math.round(n / messages)).padStart(6)}  ${name}`);
  }
}

const chats = Number(process.env.BENCH_CHATS ?? 50);
const messages = Number(process.env.BENCH_MESSAGES ?? 4);
const redis = await startBenchRedis();
// BENCH_AGENT_THREAD=1: the agent role on a worker thread (`agent.threads: 1`), whose runner the main thread's admission
// claims sessions for; BENCH_AGENT_PROCESS=1: the agent role in a second process (`hub start`, roles ["agent"]).
const bench = await startBenchHub(redis.url, undefined, {
  agentThread: process.env.BENCH_AGENT_THREAD === "1",
  agentProcess: process.env.BENCH_AGENT_PROCESS === "1",
});
const tally = new Tally(scriptNames(process.cwd()));
// redis-cli's MONITOR output, one command per line: `<time> [<db> <client or lua>] "CMD" "arg" ...`.
const monitor = spawn("redis-cli", ["-u", redis.url, "monitor"], { stdio: ["ignore", "pipe", "inherit"] });
try {
  // Read from the start, counted only for the measured load.
  let counting = false;
  monitor.stdout?.setEncoding("utf8");
  createInterface({ input: monitor.stdout as NodeJS.ReadableStream }).on("line", (l) => {
    if (counting) tally.line(l);
  });
  // Warm up (scripts loaded, connections open), and past the first seconds of a started hub, which publish
  // chat events while they cannot yet know that no web client listens (see ChatListeners).
  await driveChats(bench.fake, { chats: 5, messages: 1, window: 1, timeoutMs: 30_000, firstChat: 90_000 });
  await new Promise((r) => setTimeout(r, 2500));
  counting = true;
  const load = await driveChats(bench.fake, { chats, messages, window: 2, timeoutMs: 60_000 });
  // Let delivery settle (its tracking runs after the platform saw the reply).
  await new Promise((r) => setTimeout(r, 500));
  console.log(`Redis commands per inbound message (${load.answered} answered, ${load.lost} lost):`);
  tally.print(load.answered);
} finally {
  monitor.kill();
  await bench.stop();
  await redis.stop();
}
process.exit(0);
