import { benchIdleSessions } from "./idle.js";
import { benchThrottled } from "./throttled.js";

const url = "redis://127.0.0.1:6416";
if (process.argv.includes("t")) await benchThrottled(url, { rate: 1000, seconds: 3, targets: 100 });
if (process.argv.includes("i")) await benchIdleSessions(url, Number(process.env.S ?? 500));
process.exit(0);
