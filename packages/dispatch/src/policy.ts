import type { ChannelAccess, MsgContext } from "@hub/core";

/** What admission decided for one message. */
export type AccessDecision =
  | { kind: "run" }
  | { kind: "context"; reason: string }
  | { kind: "drop"; reason: string }
  | { kind: "pair" };

const allows = (list: readonly string[], id: string) => list.includes("*") || list.includes(id);

/**
 * Groups and threads: the group must be allowed (`groupPolicy`), the sender
 * allowed in it, and, unless the group says otherwise, the bot mentioned; an
 * unmentioned message is kept as context, not answered. Returns undefined for
 * direct chats, so `dispatchGroupThread(req) ?? dispatchDirect(req)` reads as the rule.
 */
export function dispatchGroupThread(ctx: MsgContext, access: ChannelAccess): AccessDecision | undefined {
  if (ctx.chat.type === "direct") return undefined;
  if (access.groupPolicy === "disabled")
    return { kind: "drop", reason: "group messages are disabled for this channel" };
  const group = access.groups[ctx.chat.id] ?? access.groups["*"];
  if (access.groupPolicy === "allowlist" && !group)
    return { kind: "drop", reason: `group ${ctx.chat.id} is not in the allowlist` };
  if (group && group.allowFrom.length > 0 && !allows(group.allowFrom, ctx.sender.id)) {
    return { kind: "drop", reason: `sender ${ctx.sender.id} is not allowed in group ${ctx.chat.id}` };
  }
  if ((group?.requireMention ?? true) && !ctx.wasMentioned)
    return { kind: "context", reason: "not mentioned" };
  return { kind: "run" };
}

/**
 * Direct messages, by `dmPolicy`: `pairing` (listed or paired senders run;
 * anyone else is offered a pairing code), `allowlist` (only `allowFrom` or
 * paired), `open` (anyone, when `allowFrom` holds "*"), `disabled`.
 */
export function dispatchDirect(ctx: MsgContext, access: ChannelAccess, paired = false): AccessDecision {
  const listed = allows(access.allowFrom, ctx.sender.id) || paired;
  switch (access.dmPolicy) {
    case "disabled":
      return { kind: "drop", reason: "direct messages are disabled for this channel" };
    case "open":
      return allows(access.allowFrom, "*")
        ? { kind: "run" }
        : { kind: "drop", reason: 'dmPolicy "open" needs allowFrom: ["*"]' };
    case "allowlist":
      return listed
        ? { kind: "run" }
        : { kind: "drop", reason: `sender ${ctx.sender.id} is not in the allowlist` };
    case "pairing":
      return listed ? { kind: "run" } : { kind: "pair" };
  }
}

/**
 * Whether a sender may run session commands: the gateway's owner, a sender
 * named in `allowFrom` or `commandsFrom` (a wildcard never counts), or a
 * paired sender in their DM.
 */
export function commandAuthorized(ctx: MsgContext, access: ChannelAccess, paired: boolean): boolean {
  if (ctx.commandAuthorized) return true;
  const id = ctx.sender.id;
  return (
    access.allowFrom.includes(id) ||
    access.commandsFrom.includes(id) ||
    (paired && ctx.chat.type === "direct")
  );
}
