import { describe } from "vitest";
import { describeAdapterConformance } from "@hub/conformance";
import { telegramHarness } from "../../adapters/telegram/test/harness.js";
const h = telegramHarness();
const orig = h.shown!;
h.shown = (c) => { const r = orig(c); (globalThis as any).dump = () => console.log(JSON.stringify(h.fake().calls.filter(x=>/deleteMessage|editMessageText/i.test(x.method)).map(x=>[x.method, x.params.message_id, String(x.params.text).slice(0,40), String(x.params.text).length, x.error_code]))); return r; };
describeAdapterConformance("telegram", () => h);
