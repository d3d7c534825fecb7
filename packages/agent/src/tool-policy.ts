import type { ToolCall } from "./model.js";
import type { AgentTool } from "./tools.js";

/** Allow and deny lists of tool names at one level (agent, channel, group); `*` matches every tool. */
export interface ToolLists {
  allow?: readonly string[];
  deny?: readonly string[];
}

/** What a tool needs before it runs: nothing (`allow`), never runs (`deny`), or the user's approval (`ask`). */
export type ApprovalMode = "allow" | "deny" | "ask";

const matches = (list: readonly string[] | undefined, name: string) =>
  !!list && (list.includes("*") || list.includes(name));

/**
 * The tools a run gets: those of the profile, narrowed by each level's allow
 * list (when it has one) and minus every level's deny list. Deny wins.
 */
export function assembleTools(
  available: readonly AgentTool[],
  profile: readonly string[],
  levels: readonly ToolLists[],
): AgentTool[] {
  return available.filter((tool) => {
    const name = tool.spec.name;
    if (!matches(profile, name)) return false;
    for (const level of levels) {
      if (matches(level.deny, name)) return false;
      if (level.allow && level.allow.length > 0 && !matches(level.allow, name)) return false;
    }
    return true;
  });
}

/** A hook that sees a tool call before it runs: it may block it, or (before approval only) change its arguments. */
export type ToolHook = (
  call: ToolCall,
  args: unknown,
) => Promise<{ block: string } | { args: unknown } | undefined>;

/** The verdict on one tool call; `stopRun` ends the whole run (a policy stop). */
export type ToolVerdict = { run: true; args: unknown } | { run: false; result: string; stopRun?: true };

/** Options of a run's tool-call chain. */
export interface ToolCallChainOptions {
  /** Tools this run may use (after `assembleTools`). */
  allowed: ReadonlySet<string>;
  approvals: Readonly<Record<string, ApprovalMode>>;
  /** Asks the user to approve a call; undefined when the surface cannot ask (then `ask` means deny). */
  ask?: (call: ToolCall, args: unknown) => Promise<boolean>;
  hooks?: readonly ToolHook[];
  /** The same call (tool + arguments) this many times in one run is a loop. */
  maxRepeats?: number;
}

/**
 * The one ordered chain every tool call passes before it runs: loop guard,
 * policy, approval, hooks, final check. A refusal becomes the tool's result,
 * so the model learns why and the transcript stays paired.
 */
export class ToolCallChain {
  readonly #seen = new Map<string, number>();
  constructor(private readonly o: ToolCallChainOptions) {}

  async authorize(call: ToolCall): Promise<ToolVerdict> {
    const name = call.name;
    // 1. Loop guard.
    const key = `${name}\u0000${call.arguments.trim()}`;
    const count = (this.#seen.get(key) ?? 0) + 1;
    this.#seen.set(key, count);
    if (count > (this.o.maxRepeats ?? 3)) {
      return {
        run: false,
        result: `Refused by the loop guard: ${name} was already called ${count - 1} times with these arguments in this run. Do not call it again; answer with what you have.`,
      };
    }
    // 2. Policy.
    if (!this.o.allowed.has(name))
      return { run: false, result: `Refused: the tool ${name} is not allowed in this chat.` };
    let args: unknown;
    try {
      args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
    } catch {
      return {
        run: false,
        result: `Refused: the arguments of ${name} are not valid JSON; call it again with a JSON object.`,
      };
    }
    // 3. Approval.
    const mode = this.o.approvals[name] ?? "allow";
    if (mode === "deny") return { run: false, result: `Refused: the operator has disabled ${name}.` };
    let approved: string | undefined;
    if (mode === "ask") {
      if (!this.o.ask)
        return {
          run: false,
          result: `Refused: ${name} needs the user's approval, and this chat cannot ask for it.`,
        };
      if (!(await this.o.ask(call, args)))
        return { run: false, result: `Refused: the user did not approve running ${name}.` };
      approved = JSON.stringify(args);
    }
    // 4. Hooks.
    for (const hook of this.o.hooks ?? []) {
      const outcome = await hook(call, args);
      if (!outcome) continue;
      if ("block" in outcome) return { run: false, result: `Refused by a hook: ${outcome.block}` };
      if ("stopRun" in outcome)
        return { run: false, result: `Stopped by policy: ${outcome.stopRun}`, stopRun: true };
      args = outcome.args;
    }
    // 5. Final check: what runs is what was approved.
    if (approved !== undefined && JSON.stringify(args) !== approved) {
      return {
        run: false,
        result: `Refused: the arguments of ${name} changed after the user approved them.`,
      };
    }
    return { run: true, args };
  }
}
