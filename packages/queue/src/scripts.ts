/**
 * The mailbox's atomic steps, as Lua scripts. Every step that decides
 * "is a drain owed" or "who drains" runs inside Redis in one step, because the
 * race that loses a segment is exactly a push landing between a drainer's
 * "mailbox is empty" check and its "I am done" mark.
 *
 * Keys of one mailbox `M` and item key `k`:
 * - `M:q:k`     list of items, oldest first (item = "<id>|<payload>")
 * - `M:own:k`   drain owner token, with a lease (PX); renewed while draining
 * - `M:nb:k`    "not before": set while the key waits out a retry-after
 * - `M:sched`   zset key -> time by which a drain must have shown progress;
 *               a key is in it exactly while its items are owed a drain
 * - `M:ready`   list of keys to wake (each step that makes a drain owed puts the key
 *               there itself, unless it claimed the key for its own process: see
 *               commands/owe-drain.lua): drain workers BLMPOP it
 * - `M:delayed` zset key -> time its delay ends (then it moves to `ready`)
 * - `M:att:k`   "<n>|<item id>": attempts of the key's head item (while the key is drained)
 * - `M:once:<id>` set by a push made once per id (push-once.lua), for its TTL
 * - `M:g:<group>` a group's failed items while it is open (a counter, absent while none failed),
 *               "<total>|<delivered>|<failed>" once its last item is acked (a mailbox with
 *               `groups`: item ids `<group>#<n>`, the last `<group>#<tag>$<total>`)
 */
import { loadScript, scriptWith } from "./redis.js";

const load = (name: string) => loadScript(new URL(`./commands/${name}.lua`, import.meta.url));
// A push's items (push_items) and its last step (owe or claim a drain) are Lua functions the pushes share.
const withOweDrain = (name: string) =>
  scriptWith(new URL(`./commands/${name}.lua`, import.meta.url), "push-items", "owe-drain");

/** See commands/push.lua. */
export const PUSH = withOweDrain("push");
/** See commands/fenced-push.lua. */
export const FENCED_PUSH = withOweDrain("fenced-push");
/** See commands/push-once.lua. */
export const PUSH_ONCE = withOweDrain("push-once");
/** See commands/renew.lua. */
export const RENEW = load("renew");
/** See commands/reclaim.lua. */
export const RECLAIM = load("reclaim");
/** See commands/delay.lua. */
export const DELAY = load("delay");
/** See commands/sweep.lua. */
export const SWEEP = load("sweep");
/** See commands/claim-next.lua. */
export const CLAIM_NEXT = load("claim-next");
/** See commands/ack-next.lua (the ack's function, which other scripts may run in their own step). */
export const ACK_NEXT = scriptWith(new URL("./commands/ack.lua", import.meta.url), "ack-next");
/** See commands/promote.lua. */
export const PROMOTE = load("promote");
