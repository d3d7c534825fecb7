import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HubError } from "@hub/core";

/**
 * Creates the state directory owner-only, and tightens an existing one that
 * others can read or enter (it holds tokens, credentials and transcripts);
 * refuses with one clear line when that is not possible.
 */
export function ensureStateDir(stateDir: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const mode = statSync(stateDir).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  try {
    chmodSync(stateDir, 0o700);
  } catch (error) {
    throw new HubError(
      "state_dir_open",
      `The state directory ${stateDir} is readable by other users (mode ${mode.toString(8)}) and could not be made owner-only (${(error as Error).message}); run "chmod 700 ${stateDir}" as its owner.`,
    );
  }
}

/**
 * The gateway token: from config if set; else the one stored in the state
 * dir; else a new random one, stored with mode 0600. `generated` is true only
 * the first time, so the caller prints it once.
 */
export function resolveGatewayToken(
  stateDir: string,
  configured: string | undefined,
): { token: string; generated: boolean; path: string } {
  const path = join(stateDir, "gateway-token");
  if (configured) return { token: configured, generated: false, path };
  if (existsSync(path)) {
    const stored = readFileSync(path, "utf8").trim();
    if (stored.length >= 16) return { token: stored, generated: false, path };
  }
  const token = randomBytes(24).toString("base64url");
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return { token, generated: true, path };
}

/**
 * This installation's id (one per state directory, kept in `<state dir>/instance-id`).
 * Lease tokens carry it, so a hub restarted on the same state directory knows its
 * dead predecessor's leases and resumes that work at once.
 */
export function instanceIdOf(stateDir: string): string {
  const path = join(stateDir, "instance-id");
  if (existsSync(path)) {
    const stored = readFileSync(path, "utf8").trim();
    if (/^[a-z0-9]{8,}$/.test(stored)) return stored;
  }
  const id = randomBytes(8).toString("hex");
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileSync(path, `${id}\n`, { mode: 0o600 });
  return id;
}
