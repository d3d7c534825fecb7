import { createLogger } from "@hub/core";
import { REDIS_URL } from "../../../test/support/redis.js";
import { ReplyDispatcher, type ReplyDispatcherOptions } from "../src/index.js";

/**
 * A dispatcher on the tests' Redis under `prefix`, logging nothing, for a plain-text chat of 200
 * characters with no threads, typing or edits (the fake chat platform's); `options` add to or override that.
 */
export function plainTextDispatcher(
  prefix: string,
  options: Partial<ReplyDispatcherOptions> = {},
): ReplyDispatcher {
  return new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => ({ textLimit: 200, markdown: "plain", threads: false, typing: false, edit: false }),
    ...options,
  });
}
