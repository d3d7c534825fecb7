import type { IncomingMessage } from "node:http";

/**
 * A signed form Slack posts to the Events URL when an app's slash command or interactivity Request URL
 * points there (a slash command's fields, or `payload` holding an interaction's JSON). The hub answers
 * messages, not these: a slash command gets a sentence only its user sees, an interaction is acknowledged.
 */
export class SlackForm {
  constructor(readonly fields: Readonly<Record<string, string>>) {}

  /** The slash command, e.g. `/hub`, when this form is one. */
  get command(): string | undefined {
    return this.fields.command;
  }
}

const isForm = (req: IncomingMessage) =>
  String(req.headers["content-type"] ?? "")
    .toLowerCase()
    .startsWith("application/x-www-form-urlencoded");

/** Reads a verified Events URL body: a form when Slack says so, else JSON (throws when it is neither). */
export function readSlackBody(req: IncomingMessage, rawBody: Buffer): unknown {
  const text = rawBody.toString("utf8");
  if (isForm(req)) return new SlackForm(Object.fromEntries(new URLSearchParams(text)));
  return JSON.parse(text);
}

/**
 * Slack's certificate check of a slash command's URL (`ssl_check=1`): sent unsigned, answered 200 and
 * otherwise ignored (as Bolt does). It does nothing here, so passing it unsigned risks nothing. Only the
 * check itself: a form that also carries a command or an interaction, or says `ssl_check` otherwise
 * than `1` anywhere, is not one (it must be signed like any other request).
 */
export function isSslCheck(req: IncomingMessage, rawBody: Buffer): boolean {
  if (!isForm(req)) return false;
  const form = new URLSearchParams(rawBody.toString("utf8"));
  const checks = form.getAll("ssl_check");
  return checks.length > 0 && checks.every((v) => v === "1") && !form.has("command") && !form.has("payload");
}

/** What a user who ran a slash command pointed at the hub reads (ephemeral: only they see it). */
export function slashCommandAnswer(command: string): { contentType: string; body: string } {
  return {
    contentType: "application/json",
    body: JSON.stringify({
      response_type: "ephemeral",
      text: `This app does not take slash commands like ${command}: mention it in a channel or send it a direct message.`,
    }),
  };
}
