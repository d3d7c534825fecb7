import type { Api } from "grammy";

/** The abort signal as grammY's methods type it. */
export type GrammySignal = Parameters<Api["getMe"]>[0];

/** grammY types its signal with a polyfill's type; the runtime takes the standard one. */
export function grammySignal(signal: AbortSignal): GrammySignal;
export function grammySignal(signal: AbortSignal | undefined): GrammySignal | undefined;
export function grammySignal(signal: AbortSignal | undefined): GrammySignal | undefined {
  return signal as unknown as GrammySignal | undefined;
}
