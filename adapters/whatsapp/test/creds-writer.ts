// Saves creds in a loop until it kills itself with SIGKILL mid-way (for the crash test of the auth state).
import { useAtomicAuthState } from "../src/auth-state.js";

const dir = process.argv[2] as string;
const { state, saveCreds } = await useAtomicAuthState(dir);
state.creds.me = { id: "15550001111:7@s.whatsapp.net", name: "x".repeat(50_000) };
state.creds.account = { details: Buffer.from([1, 2, 3]) };
let saves = 0;
for (;;) {
  const pending = saveCreds();
  if (++saves === 40) process.kill(process.pid, "SIGKILL");
  await pending;
}
