import type { ChannelCapabilities } from "@hub/core";
import { chunkText } from "./chunk.js";

/**
 * Splits a block into segments that fit the channel after rendering: chunk on
 * the text limit, then re-chunk any piece whose rendered length (markup,
 * escapes) is still over it, with a proportionally smaller limit.
 */
export function chunkForChannel(
  text: string,
  capabilities: Pick<ChannelCapabilities, "textLimit" | "measure">,
): string[] {
  const { textLimit, measure } = capabilities;
  if (!measure) return chunkText(text, textLimit);
  const fit = (piece: string, limit: number): string[] => {
    const size = measure(piece);
    if (size <= textLimit) return [piece];
    const smaller = Math.max(16, Math.min(limit - 1, Math.floor((limit * textLimit * 0.95) / size)));
    if (smaller >= limit) throw new Error(`a segment cannot be made to fit ${textLimit} rendered characters`);
    return chunkText(piece, smaller).flatMap((p) => fit(p, smaller));
  };
  return chunkText(text, textLimit).flatMap((piece) => fit(piece, textLimit));
}
