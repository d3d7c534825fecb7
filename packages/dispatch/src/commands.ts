import { HUB_COMMANDS } from "@hub/core";

/** Session commands the hub handles itself, before the agent, in every channel. */
export const COMMANDS = HUB_COMMANDS;
/** A known command name. */
export type CommandName = (typeof COMMANDS)[number];

/** A parsed command: `/name[@bot] args`. */
export interface ParsedCommand {
  name: CommandName;
  args: string;
}

/** Parses a leading `/command` (with an optional `@botname`); unknown commands are not ours (the agent sees them). */
export function parseCommand(body: string): ParsedCommand | undefined {
  const match = /^\/([a-z]+)(?:@\w+)?(?:\s+([\s\S]*))?$/i.exec(body.trim());
  if (!match) return undefined;
  const name = match[1]!.toLowerCase();
  if (!(COMMANDS as readonly string[]).includes(name)) return undefined;
  return { name: name as CommandName, args: (match[2] ?? "").trim() };
}
