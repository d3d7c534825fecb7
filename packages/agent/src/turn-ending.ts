import type { AgentTurnResult } from "./turn.js";

/** The most of a model's text one answer delivers (about 25 Telegram messages); the rest is cut. */
export const MAX_ANSWER_CHARS = 100_000;

/** Said after an answer cut at MAX_ANSWER_CHARS. */
export const OVERLONG_NOTE = `[The answer was cut off here: it is longer than the ${MAX_ANSWER_CHARS.toLocaleString("en-US")} characters one answer sends.]`;

/**
 * What the user is told after the model's words when a turn did not end with a whole answer, or undefined
 * when it did. `answered`: the model said something (text, a file, an image). Without it, a turn that ended
 * "normally" with nothing (an empty answer, a content filter, the tool-loop guard) would be silence.
 */
export function turnEndingNote(
  stopReason: AgentTurnResult["stopReason"],
  answered: boolean,
): string | undefined {
  switch (stopReason) {
    case "tool_loop":
      return answered
        ? "[I stopped here: the model kept calling tools without finishing its answer.]"
        : "Sorry, I could not answer: the model kept calling tools without answering.";
    case "length":
      return answered
        ? "[The answer was cut off here: the model reached its output limit.]"
        : "Sorry, I could not answer: the model reached its output limit before saying anything.";
    case "content_filter":
      return answered
        ? "[The rest of the answer was withheld by the model provider's content filter.]"
        : "Sorry, I could not answer: the model provider's content filter withheld the answer.";
    case "policy_stop":
      return undefined;
    default:
      return answered
        ? undefined
        : "Sorry, the model gave an empty answer. Please try again, or say it differently.";
  }
}
