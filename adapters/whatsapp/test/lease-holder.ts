// A hub process holding a WhatsApp account's lease (for the takeover test): takes the lease, renews it
// like the adapter does, prints "held <token>" and waits to be killed.
import { Redis } from "ioredis";
import { redisLease } from "../../../test/support/redis-lease.js";

const [url, key, ttl] = process.argv.slice(2) as [string, string, string];
const lease = redisLease(new Redis(url), key, Number(ttl));
const { held } = await lease.hold();
if (!held) process.exit(3);
console.log(`held ${lease.token}`);
setInterval(() => void lease.hold(), Number(ttl) / 3);
