// `npx tsx test/bench/delivery-run.ts`: only the delivery figures of `npm run bench` (ordered delivery
// against its baselines, and the throttled target), for quick before/after runs on a private Redis.
// `--ordered-only`: a warm-up, then ordered delivery alone, its window (monotonic µs, the clock of V8's
// profiles) written to BENCH_WINDOW_FILE when set, for CPU profiles
// (`node --cpu-prof --cpu-prof-dir=<dir> --import tsx test/bench/delivery-run.ts --ordered-only`); its
// sends are the Telegram adapter's, or with `--bare` the bare node:http POST's (see send-kits.ts).
import { writeFileSync } from "node:fs";
import { benchDelivery } from "./delivery.js";
import { benchDeliveryPhase } from "./delivery-phase.js";
import { benchEnv as env, startBenchRedis } from "./meter.js";
import { bareHttpSend, telegramSend } from "./send-kits.js";

const targets = env("BENCH_TARGETS", 200);
const segments = env("BENCH_SEGMENTS", 10);

const redis = await startBenchRedis();
try {
  if (process.argv.includes("--ordered-only")) {
    const kind = process.argv.includes("--bare") ? bareHttpSend : telegramSend;
    await benchDelivery(redis.url, 50, 4, kind);
    const from = process.hrtime.bigint() / 1000n;
    await benchDelivery(redis.url, targets, segments, kind);
    if (process.env.BENCH_WINDOW_FILE)
      writeFileSync(process.env.BENCH_WINDOW_FILE, `${from} ${process.hrtime.bigint() / 1000n}`);
    await redis.stop();
    process.exit(0);
  }
  await benchDeliveryPhase(redis.url, { throttled: !process.argv.includes("--no-throttled") });
} finally {
  await redis.stop();
}
process.exit(0);
