import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PID_SPACE, PROCESS_START } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AckJournal, ORPHAN_IDLE_MS } from "../src/edge/ack-journal.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function journalDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ack-journal-"));
  dirs.push(dir);
  return join(dir, "acked");
}
// What a test record holds: an event's body and its retry number, as Slack's adapter journals them.
const Delivery = z.object({ body: z.record(z.string(), z.unknown()), retryNum: z.number().optional() });
const delivery = (eventId: string) => ({ body: { type: "event_callback", event_id: eventId }, retryNum: 1 });
const line = (value: unknown) => `${JSON.stringify(value)}\n`;
// A pid that ran and is gone: a child that exited.
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid as number;

// This process's journal in `dir`, and whether it was just compacted (it holds waiting records only).
const journalPath = (dir: string) => join(dir, `${PID_SPACE}-${process.pid}-${PROCESS_START}.jsonl`);
const justCompacted = (dir: string) => !readFileSync(journalPath(dir), "utf8").includes('"settled"');

describe("AckJournal", () => {
  it("keeps a record on disk until it is settled, and leaves no file once nothing waits", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery);
    const a = journal.record(delivery("Ev1"));
    const b = journal.record(delivery("Ev2"));
    expect(readdirSync(dir)).toEqual([`${PID_SPACE}-${process.pid}-${PROCESS_START}.jsonl`]);
    journal.settle(a);
    expect(readdirSync(dir)).toHaveLength(1);
    journal.settle(b);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("adopts what a dead process of this pid space left unsettled: recorded anew here, its file removed", () => {
    const dir = journalDir();
    mkdirSync(dir, { recursive: true });
    const orphan = join(dir, `${PID_SPACE}-${deadPid()}-0a1b2c3d.jsonl`);
    writeFileSync(
      orphan,
      line({ acked: "x.0", delivery: delivery("EvSettled") }) +
        line({ acked: "x.1", delivery: delivery("EvOpen") }) +
        line({ settled: "x.0" }) +
        '{"acked":"x.2","deliv', // a torn last line
    );
    const journal = new AckJournal(dir, Delivery);
    const adopted = journal.adoptOrphans();
    expect(adopted.map((a) => a.delivery)).toEqual([delivery("EvOpen")]);
    expect(existsSync(orphan)).toBe(false);
    // Recorded in this process's journal: a crash now leaves it to the next start.
    const next = new AckJournal(dir, Delivery);
    expect(readdirSync(dir)).toEqual([`${PID_SPACE}-${process.pid}-${PROCESS_START}.jsonl`]);
    journal.settle(adopted[0]?.key as string);
    expect(next.adoptOrphans()).toEqual([]);
  });

  it("compacts a journal that never empties: its file stays small and keeps every waiting record", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery, undefined, "test", 4096);
    journal.record(delivery("EvWaiting"));
    for (let i = 0; i < 400; i++) journal.settle(journal.record(delivery(`Ev${i}`)));
    journal.record(delivery("EvLate"));
    const name = `${PID_SPACE}-${process.pid}-${PROCESS_START}.jsonl`;
    expect(readdirSync(dir)).toEqual([name]);
    // 400 records and settles are about 45 KB of lines; compacted, a few KB at the most.
    expect(readFileSync(join(dir, name), "utf8").length).toBeLessThan(4096 + 200);
    // As after a crash: a dead process's journal, adopted by the next start, gives exactly the waiting ones.
    renameSync(join(dir, name), join(dir, `${PID_SPACE}-${deadPid()}-0a1b2c3d.jsonl`));
    const adopted = new AckJournal(dir, Delivery).adoptOrphans();
    expect(adopted.map((a) => a.delivery)).toEqual([delivery("EvWaiting"), delivery("EvLate")]);
  });

  it("removes a compaction's file that its process did not live to rename, and only that", () => {
    const dir = journalDir();
    mkdirSync(dir, { recursive: true });
    const dead = join(dir, `${PID_SPACE}-${deadPid()}-0a1b2c3d.compacting`);
    const ours = join(dir, `${PID_SPACE}-${process.pid}-${PROCESS_START}.compacting`);
    // Another pid space's (a container restarted after a crash): removed once idle, as its journals are adopted.
    const idle = join(dir, "ffffffffff-1-0a1b2c3d.compacting");
    const fresh = join(dir, "ffffffffff-2-0a1b2c3d.compacting");
    for (const path of [dead, ours, idle, fresh])
      writeFileSync(path, line({ acked: "x.0", delivery: delivery("EvA") }));
    const longAgo = (Date.now() - ORPHAN_IDLE_MS - 60_000) / 1000;
    utimesSync(idle, longAgo, longAgo);
    expect(new AckJournal(dir, Delivery).adoptOrphans()).toEqual([]);
    expect([dead, ours, idle, fresh].map((path) => existsSync(path))).toEqual([false, true, false, true]);
  });

  it("does not rewrite a large backlog at every settle while it drains", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery, undefined, "test", 4096);
    // About 10 KB waiting (Redis was down), more than the compaction threshold on its own.
    const keys = Array.from({ length: 100 }, (_, i) => journal.record(delivery(`EvBacklog${i}`)));
    let rewrites = 0;
    for (const key of keys.slice(0, 99)) {
      journal.settle(key);
      if (justCompacted(dir)) rewrites++;
    }
    // A compaction every 4 KB of settled lines (about 30 settles), not one per settle.
    expect(rewrites).toBeGreaterThan(0);
    expect(rewrites).toBeLessThan(6);
    expect(readFileSync(journalPath(dir), "utf8")).toContain("EvBacklog99");
  });

  it("keeps a compacted journal's time moving while a record is still tried (no adoption of a live one)", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery, undefined, "test", 4096);
    journal.record(delivery("EvStuck"));
    let settles = 0;
    do journal.settle(journal.record(delivery(`Ev${settles++}`)));
    while (!justCompacted(dir) && settles < 200);
    // Stopped right after a compaction, with its record still waiting.
    expect([justCompacted(dir), settles > 1]).toEqual([true, true]);
    const longAgo = (Date.now() - ORPHAN_IDLE_MS - 60_000) / 1000;
    utimesSync(journalPath(dir), longAgo, longAgo);
    journal.touch();
    expect(Date.now() - statSync(journalPath(dir)).mtimeMs).toBeLessThan(60_000);
  });

  it("adopts another pid space's journal (a container restarted after a crash) only once it is idle", () => {
    const dir = journalDir();
    mkdirSync(dir, { recursive: true });
    const other = join(dir, `ffffffffff-1-0a1b2c3d.jsonl`);
    writeFileSync(other, line({ acked: "y.0", delivery: delivery("EvOther") }));
    const journal = new AckJournal(dir, Delivery);
    // Recent: it may be a live process's (another container sharing the state dir).
    expect(journal.adoptOrphans()).toEqual([]);
    expect(existsSync(other)).toBe(true);
    const longAgo = (Date.now() - ORPHAN_IDLE_MS - 60_000) / 1000;
    utimesSync(other, longAgo, longAgo);
    expect(journal.adoptOrphans().map((a) => a.delivery)).toEqual([delivery("EvOther")]);
    expect(existsSync(other)).toBe(false);
  });

  it("never adopts a journal of a process that still runs in this pid space", () => {
    const dir = journalDir();
    mkdirSync(dir, { recursive: true });
    // This very process under another start id would be an earlier start of it; pid 1 runs.
    const live = join(dir, `${PID_SPACE}-1-0a1b2c3d.jsonl`);
    writeFileSync(live, line({ acked: "z.0", delivery: delivery("EvLive") }));
    expect(new AckJournal(dir, Delivery).adoptOrphans()).toEqual([]);
    expect(existsSync(live)).toBe(true);
  });

  it("a record made after another process took this journal away (it was idle: frozen) lands in a file on disk", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery);
    journal.record(delivery("EvBeforeFreeze"));
    const own = join(dir, readdirSync(dir)[0] as string);
    // Another container adopts the idle journal of this (frozen) process: it claims the file, reads it, removes it.
    const claimed = `${own}.claimed`;
    renameSync(own, claimed);
    expect(readFileSync(claimed, "utf8")).toContain("EvBeforeFreeze");
    rmSync(claimed);
    // The process wakes up and acknowledges another event early: that record must be on disk, not in a removed file.
    journal.record(delivery("EvAfterWake"));
    expect(existsSync(own) ? readFileSync(own, "utf8") : "").toContain("EvAfterWake");
  });

  it("a settle the disk refuses does not throw (the record stays for the next start; its admission is deduplicated)", () => {
    const dir = journalDir();
    const journal = new AckJournal(dir, Delivery);
    const key = journal.record(delivery("EvDiskError"));
    const own = join(dir, readdirSync(dir)[0] as string);
    // Removing the emptied journal fails (here: something that is not a file took its place).
    rmSync(own);
    mkdirSync(join(own, "in-the-way"), { recursive: true });
    expect(() => journal.settle(key)).not.toThrow();
  });

  it("a record the disk takes only part of (full, or a file size limit) is refused (503), and leaves no torn line", () => {
    const dir = journalDir();
    const source = fileURLToPath(new URL("../src/edge/ack-journal.ts", import.meta.url));
    // Three records of about 3 KB under an 8 KB file size limit: the third is cut short by the kernel.
    const script = `
      import { AckJournal } from ${JSON.stringify(source)};
      import { z } from ${JSON.stringify(createRequire(import.meta.url).resolve("zod"))};
      const journal = new AckJournal(${JSON.stringify(dir)}, z.object({ body: z.record(z.string(), z.unknown()) }));
      const big = (id) => ({ body: { type: "event_callback", event_id: id, pad: "x".repeat(3000) } });
      for (const id of ["Ev1", "Ev2", "Ev3"]) {
        try { journal.record(big(id)); console.log(id, "recorded"); } catch (e) { console.log(id, "refused", e.code); }
      }`;
    const child = spawnSync(
      "bash",
      ["-c", `ulimit -f 8; exec "${process.execPath}" --import tsx --input-type=module -e "$SCRIPT"`],
      { env: { ...process.env, SCRIPT: script }, encoding: "utf8", timeout: 30_000 },
    );
    expect(child.stdout).toContain("Ev1 recorded");
    expect(child.stdout).toContain("Ev2 recorded");
    // Not "recorded": a 200 would go out for a line a crash makes unreadable.
    expect(child.stdout).toMatch(/Ev3 refused/);
    const [name] = readdirSync(dir);
    const text = readFileSync(join(dir, name as string), "utf8");
    expect(text.endsWith("\n")).toBe(true);
    expect(
      text
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).delivery.body.event_id),
    ).toEqual(["Ev1", "Ev2"]);
  });
});
