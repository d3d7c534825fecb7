import { chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runCli } from "../../../../test/support/cli.js";
import { freePort } from "../../../../test/support/hub-process.js";
import { dropPrefix, testPrefix } from "../../../../test/support/redis.js";
import { hasRedisServer, type OwnRedis, startOwnRedis } from "../../../../test/support/redis-server.js";

// `hub start` with settings it cannot use: one sentence saying what to fix, exit 1, no stack, no password.
let stateDir: string;
let prefix: string;
let env: Record<string, string>;
beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "hub-start-errors-"));
  prefix = testPrefix("start-errors");
  env = { HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix, HUB_GATEWAY_PORT: String(await freePort()) };
});
afterAll(async () => {
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

const start = (more: Record<string, string>, as?: { uid: number; gid: number }) =>
  runCli(["start"], { ...env, ...more }, 30_000, as);

/** Whether anything accepts a TCP connection on the local `port`. */
function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The run printed one `hub: ` sentence and no stack, and exited 1. */
function expectOneSentence(run: CliResult): string {
  const printed = run.stdout + run.stderr;
  expect(run.code, printed).toBe(1);
  expect(run.stderr).toMatch(/^hub: /);
  expect(printed).not.toMatch(/^\s+at /m);
  return printed;
}

describe("hub start with a Redis URL it cannot use", { timeout: 180_000 }, () => {
  it("names REDIS_URL and what is wrong, never the password, for a bad port, host or database", async () => {
    const cases: Array<[string, RegExp]> = [
      ["redis://:SuperSecretRedisPw@127.0.0.1:99999", /port is not a number from 1 to 65535/],
      ["redis://:SuperSecretRedisPw@bad host:6379", /cannot be read as a URL/],
      ["redis://:SuperSecretRedisPw@127.0.0.1:notaport", /port is not a number from 1 to 65535/],
      ["redis://127.0.0.1:6391/abc", /database .* is not a whole number/],
    ];
    for (const [url, problem] of cases) {
      const printed = expectOneSentence(await start({ REDIS_URL: url }));
      expect(printed).toMatch(/REDIS_URL: redis\.url must be written redis:\/\/\[:password@\]host/);
      expect(printed).toMatch(problem);
      expect(printed).not.toContain("SuperSecretRedisPw");
      expect(printed).not.toContain("ReplyError");
    }
  });

  it("names redis.url in the file when the file set it, and keeps its password out", async () => {
    const config = join(stateDir, "bad-redis.json5");
    writeFileSync(config, "{ redis: { url: 'redis://:FileSecretRedisPw@127.0.0.1:70000' } }");
    // An empty REDIS_URL is no override (runCli sets the test Redis's).
    const printed = expectOneSentence(await start({ HUB_CONFIG: config, REDIS_URL: "" }));
    expect(printed).toContain(`The configuration in ${config} is not valid:\n  - redis.url: must be written`);
    expect(printed).not.toContain("FileSecretRedisPw");
  });

  it("a local port where nothing listens (not the default address): says to start that Redis; starts none", async () => {
    const port = await freePort();
    const printed = expectOneSentence(await start({ REDIS_URL: `redis://127.0.0.1:${port}` }));
    expect(printed).toContain(
      `No Redis answers at redis://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}): start the Redis you set there, or correct REDIS_URL (the hub starts a Redis of its own only at the default address, redis://127.0.0.1:6379).`,
    );
    expect(printed).not.toContain("started redis-server");
    // Nothing was left listening there either.
    expect(await portAnswers(port)).toBe(false);
  });

  it("keeps the password of every URL of a comma-separated cluster list out of its message", async () => {
    const url = `redis://:ClusterSecretPw99@127.0.0.1:${await freePort()},redis://:ClusterSecretPw99@127.0.0.1:${await freePort()}`;
    const printed = expectOneSentence(await start({ REDIS_URL: url }));
    expect(printed).toMatch(
      /No Redis Cluster node answers at redis:\/\/\*\*\*@127\.0\.0\.1:\d+,redis:\/\/\*\*\*@/,
    );
    expect(printed).toContain("fix REDIS_URL");
    expect(printed).not.toContain("ClusterSecretPw99");
  });
});

describe("hub start against a Redis that wants a password", { timeout: 180_000 }, () => {
  let redis: OwnRedis;
  beforeAll(async () => {
    if (hasRedisServer()) redis = await startOwnRedis({ password: "RightRedisPw123" });
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.runIf(hasRedisServer())(
    "says Redis refused the password (or wants one) and which setting to fix; starts no redis-server",
    async () => {
      const wrong = expectOneSentence(
        await start({ REDIS_URL: `redis://:WrongRedisPw456@127.0.0.1:${redis.port}` }),
      );
      expect(wrong).toContain(
        `hub: Redis at redis://***@127.0.0.1:${redis.port} refused the password (WRONGPASS invalid username-password pair or user is disabled); set the right one in REDIS_URL`,
      );
      const none = expectOneSentence(await start({ REDIS_URL: redis.url }));
      expect(none).toContain(`hub: Redis at ${redis.url} requires a password and none is set (NOAUTH`);
      for (const printed of [wrong, none]) {
        expect(printed).not.toContain("WrongRedisPw456");
        expect(printed).not.toContain("started redis-server");
        expect(printed).not.toContain("install and start Redis");
      }
    },
  );

  it.runIf(hasRedisServer())("the other commands and hub doctor say the same, not 'start it'", async () => {
    const wrong = { ...env, REDIS_URL: `redis://:WrongRedisPw456@127.0.0.1:${redis.port}` };
    const refused = `Redis at redis://***@127.0.0.1:${redis.port} refused the password (WRONGPASS`;
    const status = await runCli(["status"], wrong, 30_000);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain(`hub: ${refused}`);
    const doctor = await runCli(["doctor"], wrong, 30_000);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`FAIL  redis: ${refused}`);
    for (const run of [status, doctor]) {
      expect(run.stdout + run.stderr).not.toContain("WrongRedisPw456");
      expect(run.stdout + run.stderr).not.toContain("does not answer");
    }
  });
});

describe("hub start with other settings it cannot use", { timeout: 180_000 }, () => {
  it("HUB_LOG_LEVEL: lists the valid levels", async () => {
    const printed = expectOneSentence(await start({ HUB_LOG_LEVEL: "verbose" }));
    expect(printed).toContain(
      "hub: HUB_LOG_LEVEL=verbose is not a log level; set HUB_LOG_LEVEL to one of fatal, error, warn, info, debug, trace, silent, or unset it for info.",
    );
  });

  it("a gateway host this machine does not have: says to set HUB_GATEWAY_HOST", async () => {
    const printed = expectOneSentence(
      await start({ HUB_GATEWAY_HOST: "192.0.2.1", HUB_GATEWAY_TOKEN: "a-token-of-24-characters" }),
    );
    expect(printed).toContain(
      "hub: The gateway cannot listen on 192.0.2.1: no network interface of this machine has that address; set HUB_GATEWAY_HOST",
    );
  });

  // Root may open any port: the hub then runs as nobody (with a state dir of its own), which needs a checkout
  // others can read. Where unprivileged processes may bind port 80 (a container's default), nothing refuses it.
  const root = process.getuid?.() === 0;
  const refusesPort80 =
    unprivilegedPortStart() > 80 && (!root || readableByOthers(fileURLToPath(import.meta.url)));
  it.skipIf(!refusesPort80)(
    "a port below 1024 without the privilege: says to set HUB_GATEWAY_PORT",
    async () => {
      const own = mkdtempSync(join(tmpdir(), "hub-start-eacces-"));
      if (root) chownSync(own, 65534, 65534);
      try {
        const run = await start(
          { HUB_STATE_DIR: own, HOME: own, HUB_GATEWAY_PORT: "80" },
          root ? { uid: 65534, gid: 65534 } : undefined,
        );
        expect(expectOneSentence(run)).toContain(
          "hub: The gateway is not allowed to listen on port 80 of 127.0.0.1 (ports below 1024 need root or the CAP_NET_BIND_SERVICE capability); set HUB_GATEWAY_PORT",
        );
      } finally {
        rmSync(own, { recursive: true, force: true });
      }
    },
  );

  it("a bad value from an environment variable names the variable, not the config file", async () => {
    const config = join(stateDir, "good.json5");
    writeFileSync(config, "{ agent: { model: 'offline/echo' } }");
    const cases: Array<[Record<string, string>, string]> = [
      [{ HUB_GATEWAY_PORT: "abc" }, "HUB_GATEWAY_PORT=abc: gateway.port expects a number"],
      [
        { HUB_GATEWAY_TOKEN: "short-token" },
        "HUB_GATEWAY_TOKEN: gateway.token must be at least 16 characters",
      ],
      [{ HUB_ROLES: "ingress,agnet" }, "HUB_ROLES=ingress,agnet: roles.1 expects one of"],
      [
        { HUB_SESSIONS_STORE: "Redis" },
        'HUB_SESSIONS_STORE=Redis: sessions.store expects one of "files", "redis"',
      ],
    ];
    for (const [bad, line] of cases) {
      const printed = expectOneSentence(await start({ HUB_CONFIG: config, ...bad }));
      expect(printed).toContain(line);
      expect(printed).not.toContain(config);
      expect(printed).not.toContain("short-token");
    }
  });
});

// The first port a process without privileges may bind (Linux; 1024 where the file is missing).
function unprivilegedPortStart(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_unprivileged_port_start", "utf8").trim());
  } catch {
    return 1024;
  }
}

// Whether every directory above `file` lets others through and the file lets them read.
function readableByOthers(file: string): boolean {
  if ((statSync(file).mode & 0o004) === 0) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}
