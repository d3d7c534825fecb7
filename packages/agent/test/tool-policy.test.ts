import { describe, expect, it } from "vitest";
import { type AgentTool, assembleTools, currentTimeTool, ToolCallChain } from "../src/index.js";

const tool = (name: string): AgentTool => ({
  spec: { name, description: name, parameters: { type: "object" } },
  run: async () => name,
});
const all = [tool("a"), tool("b"), tool("c"), currentTimeTool];
const call = (name: string, args = "{}") => ({ id: `call-${Math.random()}`, name, arguments: args });

describe("assembleTools", () => {
  it("narrows the profile by each level's allow list and removes every deny; deny wins", () => {
    const names = (t: AgentTool[]) => t.map((x) => x.spec.name);
    expect(names(assembleTools(all, ["*"], []))).toEqual(["a", "b", "c", "current_time"]);
    expect(names(assembleTools(all, ["a", "b"], []))).toEqual(["a", "b"]);
    expect(
      names(assembleTools(all, ["*"], [{ deny: ["b"] }, { allow: ["a", "b", "c"] }, { deny: ["c"] }])),
    ).toEqual(["a"]);
    expect(names(assembleTools(all, ["*"], [{ allow: ["a"], deny: ["a"] }]))).toEqual([]);
    expect(names(assembleTools(all, ["*"], [{ deny: ["*"] }]))).toEqual([]);
  });
});

describe("ToolCallChain", () => {
  it("gives the model a clear result for a tool that is not allowed or disabled", async () => {
    const chain = new ToolCallChain({ allowed: new Set(["a", "b"]), approvals: { b: "deny" } });
    expect(await chain.authorize(call("c"))).toEqual({
      run: false,
      result: "Refused: the tool c is not allowed in this chat.",
    });
    expect(await chain.authorize(call("b"))).toEqual({
      run: false,
      result: "Refused: the operator has disabled b.",
    });
    expect(await chain.authorize(call("a", '{"x":1}'))).toEqual({ run: true, args: { x: 1 } });
  });

  it("asks for approval: granted runs, refused does not; a surface that cannot ask denies", async () => {
    const asked: string[] = [];
    let answer = true;
    const chain = new ToolCallChain({
      allowed: new Set(["a"]),
      approvals: { a: "ask" },
      ask: async (c) => {
        asked.push(c.name);
        return answer;
      },
    });
    expect(await chain.authorize(call("a", '{"n":1}'))).toEqual({ run: true, args: { n: 1 } });
    answer = false;
    expect(await chain.authorize(call("a", '{"n":2}'))).toEqual({
      run: false,
      result: "Refused: the user did not approve running a.",
    });
    expect(asked).toEqual(["a", "a"]);
    const mute = new ToolCallChain({ allowed: new Set(["a"]), approvals: { a: "ask" } });
    expect((await mute.authorize(call("a"))).run).toBe(false);
  });

  it("a hook may change arguments of an unapproved call, but not after approval", async () => {
    const rewrite = async () => ({ args: { path: "/etc/shadow" } });
    const free = new ToolCallChain({ allowed: new Set(["a"]), approvals: {}, hooks: [rewrite] });
    expect(await free.authorize(call("a", '{"path":"notes.md"}'))).toEqual({
      run: true,
      args: { path: "/etc/shadow" },
    });
    const gated = new ToolCallChain({
      allowed: new Set(["a"]),
      approvals: { a: "ask" },
      ask: async () => true,
      hooks: [rewrite],
    });
    expect(await gated.authorize(call("a", '{"path":"notes.md"}'))).toEqual({
      run: false,
      result: "Refused: the arguments of a changed after the user approved them.",
    });
  });

  it("a hook can block a call", async () => {
    const chain = new ToolCallChain({
      allowed: new Set(["a"]),
      approvals: {},
      hooks: [async () => ({ block: "not on weekends" })],
    });
    expect(await chain.authorize(call("a"))).toEqual({
      run: false,
      result: "Refused by a hook: not on weekends",
    });
  });

  it("the loop guard stops the same call repeated, and the guard runs before approval", async () => {
    let asks = 0;
    const chain = new ToolCallChain({
      allowed: new Set(["a"]),
      approvals: { a: "ask" },
      ask: async () => {
        asks++;
        return true;
      },
      maxRepeats: 2,
    });
    expect((await chain.authorize(call("a", '{"q":1}'))).run).toBe(true);
    expect((await chain.authorize(call("a", '{"q":1}'))).run).toBe(true);
    const third = await chain.authorize(call("a", '{"q":1}'));
    expect(third.run).toBe(false);
    expect(asks).toBe(2);
    expect((await chain.authorize(call("a", '{"q":2}'))).run).toBe(true);
  });
});
