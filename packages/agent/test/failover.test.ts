import { createLogger } from "@hub/core";
import { describe, expect, it } from "vitest";
import { type FailoverDecision, FailoverProvider, isFailover } from "../src/failover.js";
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from "../src/model.js";
import { OfflineProvider } from "../src/providers/offline.js";

const log = createLogger({ level: "silent" });
const request: ModelRequest = { model: "m", messages: [{ role: "user", content: "hello there" }] };

/** A model that streams `words` and then fails with `failure` (before any word when `words` is empty). */
function scripted(words: string[], failure?: ModelError) {
  const calls: string[] = [];
  let closed = 0;
  const provider: ModelProvider = {
    id: "scripted",
    async *stream(r) {
      calls.push(r.model);
      try {
        for (const w of words) yield { type: "text", delta: w };
        if (failure) throw failure;
        yield { type: "done", stopReason: "stop" };
      } finally {
        closed++;
      }
    },
  };
  return { provider, calls, closed: () => closed };
}

async function collect(stream: AsyncIterable<ModelEvent>): Promise<string[]> {
  const out: string[] = [];
  for await (const e of stream) out.push(e.type === "text" ? e.delta : e.type);
  return out;
}

function chainOf(...candidates: Array<{ ref: string; providers: ModelProvider[] }>) {
  const decisions: FailoverDecision[] = [];
  const chain = new FailoverProvider(
    candidates.map((c) => ({
      ref: c.ref,
      model: c.ref.split("/")[1] ?? c.ref,
      profiles: c.providers.map((provider, i) => ({ id: `${c.ref}#${i}`, provider })),
    })),
    log,
    (d) => decisions.push(d),
  );
  return { chain, decisions };
}

describe("FailoverProvider", () => {
  it("streams the first candidate's events unchanged", async () => {
    const offline = new OfflineProvider();
    const { chain, decisions } = chainOf({ ref: "offline/x", providers: [offline] });
    expect(await collect(chain.stream(request))).toEqual(await collect(offline.stream(request)));
    expect(decisions).toEqual([]);
  });

  it("rotates to the next auth profile after an auth failure, then to the next model when overloaded", async () => {
    const refused = scripted([], new ModelError("auth", "bad key"));
    const overloaded = scripted([], new ModelError("overloaded", "busy"));
    const backup = scripted(["from ", "backup"]);
    const { chain, decisions } = chainOf(
      { ref: "main/big", providers: [refused.provider, overloaded.provider] },
      { ref: "backup/small", providers: [backup.provider] },
    );
    expect(await collect(chain.stream(request))).toEqual(["from ", "backup", "done"]);
    expect(decisions.map((d) => [d.ref, d.profile, d.kind, d.action])).toEqual([
      ["main/big", "main/big#0", "auth", "rotate_profile"],
      ["main/big", "main/big#1", "overloaded", "next_model"],
    ]);
    expect(backup.calls).toEqual(["small"]);
    // The refused key cools down: the next call starts with the other profile.
    await collect(chain.stream(request)).catch(() => {});
    expect(refused.calls.length).toBe(1);
  });

  it("surfaces a bad request without trying other models", async () => {
    const bad = scripted([], new ModelError("bad_request", "no such model"));
    const other = scripted(["never"]);
    const { chain, decisions } = chainOf(
      { ref: "main/big", providers: [bad.provider] },
      { ref: "backup/small", providers: [other.provider] },
    );
    await expect(collect(chain.stream(request))).rejects.toThrow("no such model");
    expect(other.calls).toEqual([]);
    expect(decisions.map((d) => d.action)).toEqual(["surface"]);
  });

  it("never fails over once a candidate has streamed: the failure is surfaced and recorded", async () => {
    const half = scripted(["half ", "an answer"], new ModelError("overloaded", "dropped"));
    const other = scripted(["never"]);
    const { chain, decisions } = chainOf(
      { ref: "main/big", providers: [half.provider] },
      { ref: "backup/small", providers: [other.provider] },
    );
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const e of chain.stream(request)) if (e.type === "text") seen.push(e.delta);
      })(),
    ).rejects.toThrow("dropped");
    expect(seen).toEqual(["half ", "an answer"]);
    expect(other.calls).toEqual([]);
    expect(decisions.map((d) => [d.kind, d.action])).toEqual([["overloaded", "surface"]]);
  });

  it("a call its run aborted (a /stop) is no failure: passed on, neither recorded nor cooled down, nothing else tried", async () => {
    const stopped = scripted(["half "], new ModelError("aborted", "model call aborted"));
    const other = scripted(["never"]);
    const { chain, decisions } = chainOf(
      { ref: "main/big", providers: [stopped.provider] },
      { ref: "backup/small", providers: [other.provider] },
    );
    await expect(collect(chain.stream(request))).rejects.toThrow("model call aborted");
    // Aborted before the first event (the signal says so, whatever the provider threw).
    const abort = new AbortController();
    abort.abort();
    const early = scripted([], new ModelError("network", "socket closed"));
    const second = chainOf(
      { ref: "main/big", providers: [early.provider] },
      { ref: "backup/small", providers: [other.provider] },
    );
    await expect(collect(second.chain.stream({ ...request, signal: abort.signal }))).rejects.toThrow(
      "socket closed",
    );
    expect([...decisions, ...second.decisions]).toEqual([]);
    expect(other.calls).toEqual([]);
    await collect(chain.stream(request)).catch(() => {});
    expect(stopped.calls.length).toBe(2);
  });

  it("throws the last failure when every candidate failed", async () => {
    const a = scripted([], new ModelError("network", "down"));
    const b = scripted([], new ModelError("rate_limit", "slow down"));
    const { chain, decisions } = chainOf(
      { ref: "a/x", providers: [a.provider] },
      { ref: "b/y", providers: [b.provider] },
    );
    await expect(collect(chain.stream(request))).rejects.toThrow("slow down");
    // The last candidate has no other key and no next model: its failure is surfaced, no failover said.
    expect(decisions.map((d) => d.action)).toEqual(["next_model", "surface"]);
  });

  it("never records a move to something the chain does not have: one key, one model, a 401 is surfaced", async () => {
    const only = scripted([], new ModelError("auth", "bad key"));
    const { chain, decisions } = chainOf({ ref: "a/x", providers: [only.provider] });
    await expect(collect(chain.stream(request))).rejects.toThrow("bad key");
    expect(decisions.map((d) => [d.action, isFailover(d)])).toEqual([["surface", false]]);
  });

  it("closes the candidate's stream when the consumer stops early", async () => {
    const long = scripted(["one ", "two ", "three"]);
    const { chain } = chainOf({ ref: "main/big", providers: [long.provider] });
    for await (const e of chain.stream(request)) if (e.type === "text") break;
    expect(long.closed()).toBe(1);
  });
});
