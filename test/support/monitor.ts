import { EventEmitter } from "node:events";
import { connect } from "node:net";
import { REDIS_URL } from "./redis.js";

/** A MONITOR connection: every command Redis runs (scripts' commands too), with its arguments. */
export interface RedisMonitor {
  on(event: "monitor", listener: (time: string, args: string[]) => void): this;
  disconnect(): void;
}

/**
 * Opens a MONITOR connection and resolves once Redis confirmed it, so every command after that is seen.
 * Our own small client, not ioredis's `monitor()`: ioredis enters its monitoring mode a tick after the
 * MONITOR's "OK", so a command line arriving in the same packet as that OK (other test files' traffic on
 * the same Redis) fails it with "Command queue state error".
 */
export function monitorRedis(url = REDIS_URL): Promise<RedisMonitor> {
  const { hostname, port, username, password } = new URL(url);
  const events = new EventEmitter();
  const socket = connect(Number(port || 6379), hostname || "127.0.0.1");
  const monitor = Object.assign(events, { disconnect: () => void socket.destroy() }) as RedisMonitor;
  return new Promise((resolve, reject) => {
    let buffer = "";
    // The OKs before MONITOR's own: AUTH's, when the URL has a password.
    let okToSkip = password ? 1 : 0;
    let confirmed = false;
    socket.setEncoding("utf8");
    socket.on("connect", () => {
      const auth = username ? [username, password] : [password];
      if (password) socket.write(resp(["AUTH", ...auth.map(decodeURIComponent)]));
      socket.write(resp(["MONITOR"]));
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error("the MONITOR connection closed before Redis confirmed it")));
    socket.on("data", (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf("\r\n"); nl >= 0; nl = buffer.indexOf("\r\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        if (line.startsWith("-")) reject(new Error(`MONITOR refused: ${line.slice(1)}`));
        else if (line === "+OK" && !confirmed) {
          if (okToSkip-- > 0) continue;
          confirmed = true;
          resolve(monitor);
        } else if (line.startsWith("+")) events.emit("monitor", ...parseMonitorLine(line.slice(1)));
      }
    });
  });
}

// A command as RESP (an array of bulk strings), so any argument passes whole.
function resp(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

// `1796135501.198380 [0 127.0.0.1:54790] "set" "k" "v"`: the time, then each argument quoted as Redis
// quotes it (backslash escapes, `\xHH` for other bytes).
function parseMonitorLine(line: string): [string, string[]] {
  const time = line.slice(0, line.indexOf(" "));
  const args: string[] = [];
  for (const m of line.slice(line.indexOf("]") + 1).matchAll(/"((?:[^"\\]|\\.)*)"/g))
    args.push(unquote(m[1] ?? ""));
  return [time, args];
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  r: "\r",
  t: "\t",
  a: "\x07",
  b: "\b",
  '"': '"',
  "\\": "\\",
};

function unquote(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) =>
    e.length === 3 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : (ESCAPES[e] ?? e),
  );
}
