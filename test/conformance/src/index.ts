/**
 * The channel adapter conformance suite, imported by name (`@hub/conformance`).
 *
 * How a channel runs it: its package exports a harness (a `ConformanceHarness`
 * that drives the adapter through its fake platform, speaking the platform's
 * real API) from the `./conformance` entry of its package.json, and one test
 * file calls the suite with it:
 *
 * ```ts
 * // adapters/discord/test/conformance.test.ts
 * import { describeAdapterConformance } from "@hub/conformance";
 * import { discordHarness } from "./harness.js";
 * describeAdapterConformance("discord", () => discordHarness());
 * ```
 *
 * The suite starts a whole hub (dispatch, lanes, a fake model, ordered delivery)
 * with the harness's adapter and runs the same channel-neutral cases for every
 * channel. See `harness.ts` for what a harness must do.
 */
export * from "./fuzz.js";
export * from "./harness.js";
export * from "./media-cases.js";
export * from "./suite.js";
