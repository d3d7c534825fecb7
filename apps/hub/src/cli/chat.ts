import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import { z } from "zod";
import { configOf, gatewayAddress, terminalSafe, timeoutSeconds, via } from "./context.js";
import { type GatewayConnection, openGateway } from "./gateway-client.js";

// What the gateway answers to chat.send, and one `chat` event of the answer (see README's Gateway protocol).
const SendAnswerSchema = z.looseObject({
  runId: z.string().optional(),
  sessionKey: z.string().optional(),
  status: z.string(),
  /** A refusal's sentence, e.g. "Not accepted: the message is empty." */
  error: z.string().optional(),
});
const ChatEventSchema = z.looseObject({
  runId: z.string(),
  state: z.enum(["delta", "final", "error", "aborted"]),
  text: z.string().optional(),
});

/** `hub chat <text...> [--session key] [--timeout s]`: one message to the agent, and its answer. */
export function registerChat(program: Command): void {
  program
    .command("chat <text...>")
    .description(
      "send a message to the agent through the running hub's gateway and print its answer as it is delivered (the web chat's protocol)",
    )
    .option("--session <key>", "the session to write in (default: the web chat's own session of the token)")
    .option("--timeout <seconds>", "how long to wait for the answer", "120")
    .action(async (words: string[], opts: { session?: string; timeout: string }, command: Command) => {
      const { config } = configOf(command);
      const timeoutMs = timeoutSeconds(opts.timeout) * 1000;
      const address = gatewayAddress(config);
      via(`gateway ${config.gateway.host}:${address.port} with ${address.tokenSource}`);
      const gateway = await openGateway(address);
      try {
        process.exitCode = await chatOnce(gateway, words.join(" "), opts.session, timeoutMs);
      } finally {
        gateway.close();
      }
    });
}

// Sends the text and prints each delivered segment of the answer; the exit code: 0 once it is final.
async function chatOnce(
  gateway: GatewayConnection,
  text: string,
  sessionKey: string | undefined,
  timeoutMs: number,
): Promise<number> {
  let runId: string | undefined;
  const early: Array<z.infer<typeof ChatEventSchema>> = [];
  let finished = false;
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => (resolveDone = resolve));
  const settle = (code: number, why?: string) => {
    if (finished) return;
    finished = true;
    if (why) console.error(why);
    resolveDone(code);
  };
  const onChat = (event: z.infer<typeof ChatEventSchema>) => {
    // The model's words, which may carry terminal escapes: printed as `\u001b`, never run by the terminal.
    if (event.state === "delta" && event.text) console.log(terminalSafe(event.text));
    if (event.state === "final") settle(0);
    if (event.state === "error" || event.state === "aborted")
      settle(
        1,
        `hub: the answer ended with "${event.state}"${event.text ? `: ${terminalSafe(event.text)}` : ""}.`,
      );
  };
  gateway.onEvent((frame) => {
    const event = frame.event === "chat" ? ChatEventSchema.safeParse(frame.payload) : undefined;
    if (!event?.success) return;
    // Events may come before chat.send's answer names the run: kept until then.
    if (runId === undefined) early.push(event.data);
    else if (event.data.runId === runId) onChat(event.data);
  });
  const params = { text, idempotencyKey: `cli-${randomUUID()}`, ...(sessionKey ? { sessionKey } : {}) };
  const answer = SendAnswerSchema.parse(await gateway.request("chat.send", params));
  if (answer.status === "rejected" || !answer.runId) {
    console.error(`hub: ${terminalSafe(answer.error ?? `the message was not accepted (${answer.status}).`)}`);
    return 1;
  }
  runId = answer.runId;
  for (const event of early.splice(0)) if (event.runId === runId) onChat(event);
  const timer = setTimeout(
    () =>
      settle(
        1,
        `hub: no complete answer within ${timeoutMs / 1000} s (the run ${runId} may still be going).`,
      ),
    timeoutMs,
  );
  void gateway.closed.then(() =>
    settle(
      1,
      "hub: the gateway closed the connection before the answer was complete (the hub stopped or restarted?). A message it accepted is still answered once the hub runs again (or, after a long outage, the chat is told it was not); the web chat shows it in the session's history.",
    ),
  );
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}
