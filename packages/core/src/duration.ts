import { z } from "zod";

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * A config duration: a string with its unit (`"500ms"`, `"90s"`, `"30m"`, `"2h"`, `"1d"`). Parses to
 * whole milliseconds. A bare number is refused: some read it as seconds, others as milliseconds, and
 * either misreading turns a limit into a thousandth or a thousandfold of itself.
 */
export const DurationSchema = z
  .string({ error: 'write it as a duration with its unit, like "30m", "90s" or "2h"' })
  .transform((value, ctx) => {
    const ms = durationMs(value.trim());
    if (ms !== undefined && Number.isFinite(ms) && ms >= 1) return Math.round(ms);
    ctx.addIssue({
      code: "custom",
      message: `"${value}" is not a duration: write it with its unit, like "30m", "90s" or "2h"`,
    });
    return z.NEVER;
  });

function durationMs(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match?.[1] || !match[2]) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
