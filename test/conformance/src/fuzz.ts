// Seeded mutation of real-shaped platform payloads: what a platform (or an attacker) could send
// that no schema author thought of. The same seed gives the same payloads, so a failure replays.

/** A seeded pseudo-random generator (mulberry32): `next()` in [0, 1). */
export class SeededRandom {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function deepNest(depth: number): Json {
  let value: Json = "bottom";
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { nested: value };
  return value;
}

/** Values of the wrong type, huge, invalid or deeply nested: what replaces a field. */
function strangeValue(rng: SeededRandom): Json {
  switch (rng.int(14)) {
    case 0:
      return null;
    case 1:
      return rng.next() < 0.5;
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e-308]);
    case 3:
      return "";
    case 4:
      return "x".repeat(100_000 + rng.int(50_000));
    case 5:
      // Lone surrogates, NUL and control characters, bidi overrides.
      return rng.pick([
        "\ud800",
        "\udfff tail",
        "\u0000",
        "a\u0007b\u001b[31m",
        "\u202eevil",
        "🤖".repeat(5000),
      ]);
    case 6:
      return [];
    case 7:
      return {};
    case 8:
      return deepNest(200 + rng.int(800));
    case 9:
      return Array.from({ length: 1 + rng.int(2000) }, (_, i) => i);
    case 10:
      return rng.pick([
        "12",
        "-1001234567",
        "true",
        "null",
        "{}",
        "[]",
        "@bot",
        "/stop",
        "/stop@hub_test_bot",
      ]);
    case 11:
      return { id: rng.pick(["1", 1, null, []]), type: rng.pick(["private", "??", 7]) };
    case 12:
      return rng.pick(["__proto__", "constructor", "toString"]);
    default:
      return rng.int(1_000_000);
  }
}

/** Every path to a value inside a JSON value (objects and arrays), depth first. */
function paths(value: Json, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []) {
  if (value !== null && typeof value === "object") {
    const entries: Array<[string | number, Json]> = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      const path = [...prefix, key];
      out.push(path);
      if (out.length < 500) paths(child, path, out);
    }
  }
  return out;
}

function parentOf(root: Json, path: Array<string | number>): { [key: string]: Json } | Json[] | undefined {
  let node: Json = root;
  for (const key of path.slice(0, -1)) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, Json>)[key as string] as Json;
  }
  return node !== null && typeof node === "object" ? node : undefined;
}

/**
 * One mutation of a payload: a field deleted, replaced by a strange value,
 * a new strange field added, or the whole payload replaced. The input is not changed.
 */
export function mutate(payload: unknown, rng: SeededRandom, mutations = 1 + rng.int(3)): unknown {
  let root = structuredClone(payload) as Json;
  for (let m = 0; m < mutations; m++) {
    const all = paths(root);
    if (all.length === 0 || rng.int(40) === 0) {
      root = strangeValue(rng);
      continue;
    }
    const path = rng.pick(all);
    const parent = parentOf(root, path);
    if (!parent) continue;
    const key = path[path.length - 1] as string;
    const action = rng.int(3);
    if (action === 0) {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else if (action === 1) {
      (parent as Record<string, Json>)[key] = strangeValue(rng);
    } else if (!Array.isArray(parent)) {
      parent[rng.pick(["extra", "text", "chat", "from", "date", "id", "type", "entities"])] =
        strangeValue(rng);
    }
  }
  return root;
}

/** How the fuzz reaches an adapter: real-shaped payloads and the platform's real delivery path. */
export interface FuzzTarget {
  /** A real-shaped inbound payload carrying `text` (from a sender the suite does not allow: no runs). */
  valid(text: string): unknown;
  /** Delivers one raw payload the way the platform does; the HTTP status when it is a webhook. */
  deliver(payload: unknown): Promise<{ status?: number }>;
  /** How many deliveries may be in flight at once (default 8). */
  concurrency?: number;
}

/** What a fuzz run saw. */
export interface FuzzReport {
  delivered: number;
  /** HTTP status -> count (webhook platforms only). */
  statuses: Record<number, number>;
  /** Answers of 500 and above: a bad payload must never make the platform retry. */
  serverErrors: number;
  ms: number;
}

/** Delivers `count` seeded mutations of valid payloads (a few at a time) and counts the answers. */
export async function runFuzz(
  target: FuzzTarget,
  options: { count: number; seed: number; concurrency?: number },
): Promise<FuzzReport> {
  const rng = new SeededRandom(options.seed);
  const payloads = Array.from({ length: options.count }, (_, i) => mutate(target.valid(`fuzz ${i}`), rng));
  const report: FuzzReport = { delivered: 0, statuses: {}, serverErrors: 0, ms: 0 };
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < payloads.length) {
      const payload = payloads[next++];
      const { status } = await target.deliver(payload);
      report.delivered++;
      if (status === undefined) continue;
      report.statuses[status] = (report.statuses[status] ?? 0) + 1;
      if (status >= 500) report.serverErrors++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? target.concurrency ?? 8 }, worker));
  report.ms = performance.now() - started;
  return report;
}
