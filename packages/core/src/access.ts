import { z } from "zod";

/**
 * Who may start a DM run: `pairing` (unknown senders get a code the owner
 * approves), `allowlist` (only `allowFrom`), `open` (anyone; needs
 * `allowFrom: ["*"]`), `disabled`.
 */
export const DmPolicySchema = z.enum(["pairing", "allowlist", "open", "disabled"]);
/** Which groups get answers: `allowlist` (only `groups`), `open`, `disabled`. */
export const GroupPolicySchema = z.enum(["allowlist", "open", "disabled"]);

/** Allow and deny lists of tool names (`*` matches all); deny wins over allow at every level. */
export const ToolListsSchema = z
  .object({ allow: z.array(z.string()).default([]), deny: z.array(z.string()).default([]) })
  .strict();

/** Per-group settings. */
export const GroupConfigSchema = z
  .object({
    /** Tools in this group (a group can be given fewer tools than the owner's DMs). */
    tools: ToolListsSchema.optional(),
    requireMention: z.boolean().default(true),
    /** Senders allowed in this group; empty means everyone in the group. */
    allowFrom: z.array(z.string()).default([]),
  })
  .strict();

/** Access settings every channel shares. */
export const ChannelAccessSchema = z.object({
  enabled: z.boolean().default(true),
  /** Tools in this channel. */
  tools: ToolListsSchema.optional(),
  accountId: z.string().min(1).default("default"),
  dmPolicy: DmPolicySchema.default("pairing"),
  /** What an unknown sender gets under `pairing`: a code to pass to the owner, or nothing. */
  unpairedResponse: z.enum(["code", "silent"]).default("code"),
  /** Senders who may run commands (/new, /stop, ...) besides those in allowFrom or paired; "*" is never implied. */
  commandsFrom: z.array(z.string()).default([]),
  allowFrom: z.array(z.string()).default([]),
  groupPolicy: GroupPolicySchema.default("allowlist"),
  groups: z.record(z.string(), GroupConfigSchema).default({}),
  /**
   * `preview`: where the channel can edit, a long answer shows as a message edited in place while the model
   * writes, then becomes the final messages; `off`: each finished part is sent as it completes.
   */
  streaming: z.enum(["off", "preview"]).default("off"),
  /** Reaction put on the user's message while a run works on it (e.g. "👀"); "off" or unset: none. */
  ackReaction: z.string().min(1).optional(),
  /** Where the acknowledgement reaction is used: `direct` chats only (default) or `all` chats (groups too). */
  ackReactionScope: z.enum(["direct", "all"]).default("direct"),
});
/** Access settings of one channel (DM policy, allowlists, groups). */
export type ChannelAccess = z.infer<typeof ChannelAccessSchema>;
