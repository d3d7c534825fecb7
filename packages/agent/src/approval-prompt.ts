/** The longest part of a tool call's arguments an approval prompt shows. */
const MAX_SHOWN_ARGS = 600;

/**
 * The question an `ask` tool posts: the tool, its arguments exactly as the model gave them (JSON, cut at
 * MAX_SHOWN_ARGS characters with what was left out counted), in a code block no backtick in them can close
 * (the person approving sees the arguments, not a rendering of them), and how to answer.
 */
export function approvalPrompt(tool: string, args: unknown, code: string, seconds: number): string {
  const json = JSON.stringify(args) ?? "null";
  const chars = Array.from(json);
  const shown =
    chars.length > MAX_SHOWN_ARGS
      ? `${chars.slice(0, MAX_SHOWN_ARGS).join("")}… (${(chars.length - MAX_SHOWN_ARGS).toLocaleString("en-US")} more characters)`
      : json;
  const longestRun = Math.max(0, ...(shown.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longestRun + 1));
  return [
    `Approve running \`${tool}\` with these arguments?`,
    `${fence}json`,
    shown,
    fence,
    `Reply /approve ${code} or /deny ${code} (within ${seconds} s).`,
  ].join("\n");
}
