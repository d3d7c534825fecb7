import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readdir, readFile, rename, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import {
  type AuthenticationCreds,
  type AuthenticationState,
  BufferJSON,
  initAuthCreds,
  proto,
  type SignalDataSet,
  type SignalDataTypeMap,
} from "@whiskeysockets/baileys";

/** A linked device's credentials and keys, as baileys' `auth` option takes them, plus how to save the creds. */
export interface StoredAuthState {
  state: AuthenticationState;
  /** Writes the current creds (wire it to `creds.update`). */
  saveCreds(): Promise<void>;
}

const CREDS = "creds.json";

// `:` and `/` appear in key ids (JIDs); file names must not carry them.
const fileName = (name: string): string => name.replace(/\//g, "__").replace(/:/g, "-");

/** Creates the folder readable only by the user (0700), tightening an existing one. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/**
 * Writes a file atomically and privately: a temporary file (0600) in the same
 * folder, flushed to disk, then renamed over the target. A crash at any point
 * leaves either the old file or the new one, never a torn one.
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const handle = await open(temp, "w", 0o600);
  try {
    await handle.writeFile(data, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

async function readJson(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return JSON.parse(text, BufferJSON.reviver);
}

/**
 * Whether the folder holds a linked device: creds with the account's id and
 * the signed device identity WhatsApp gives on a successful pairing (a pairing
 * code request sets `me` before the phone confirms, so `me` alone is not enough).
 */
export async function isLinked(dir: string): Promise<boolean> {
  try {
    const creds = (await readJson(join(dir, CREDS))) as Partial<AuthenticationCreds> | undefined;
    return typeof creds?.me?.id === "string" && creds.me.id !== "" && creds.account != null;
  } catch {
    return false;
  }
}

/** Removes every credential and key of a device WhatsApp logged out (they can never be used again). */
export async function clearAuthState(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.map((name) => rm(join(dir, name), { force: true, recursive: true })));
}

/**
 * The auth state of one linked device in `dir`, like baileys'
 * `useMultiFileAuthState` (which the baileys authors advise against in
 * production) but safe to crash in: the folder is 0700, every file 0600 and
 * written atomically (temporary file + rename), writes to one file are
 * serialized, and an unreadable `creds.json` is an error, never a silent new
 * identity that would force linking again.
 */
export async function useAtomicAuthState(dir: string): Promise<StoredAuthState> {
  await ensurePrivateDir(dir);
  // Temporary files of writes a crash interrupted: the targets still hold their previous content.
  for (const name of await readdir(dir))
    if (name.endsWith(".tmp")) await rm(join(dir, name), { force: true });
  const chains = new Map<string, Promise<unknown>>();
  const serialized = <T>(file: string, task: () => Promise<T>): Promise<T> => {
    const run = (chains.get(file) ?? Promise.resolve()).then(task, task);
    const tail = run.catch(() => undefined);
    chains.set(file, tail);
    void tail.then(() => chains.get(file) === tail && chains.delete(file));
    return run;
  };
  const write = (file: string, value: unknown) =>
    serialized(file, () => writeFileAtomic(join(dir, file), JSON.stringify(value, BufferJSON.replacer)));
  const remove = (file: string) => serialized(file, () => rm(join(dir, file), { force: true }));

  let stored: unknown;
  try {
    stored = await readJson(join(dir, CREDS));
  } catch (error) {
    throw new Error(
      `the WhatsApp credentials in ${join(dir, CREDS)} cannot be read (${(error as Error).message}); remove the folder and link again with "hub channels login whatsapp"`,
    );
  }
  const creds = (stored as AuthenticationCreds | undefined) ?? initAuthCreds();

  const get = async <T extends keyof SignalDataTypeMap>(type: T, ids: string[]) => {
    const data: { [id: string]: SignalDataTypeMap[T] } = {};
    await Promise.all(
      ids.map(async (id) => {
        const file = fileName(`${type}-${id}.json`);
        let value = await serialized(file, () => readJson(join(dir, file)).catch(() => undefined));
        if (type === "app-state-sync-key" && value)
          value = proto.Message.AppStateSyncKeyData.fromObject(value as Record<string, unknown>);
        if (value !== undefined) data[id] = value as SignalDataTypeMap[T];
      }),
    );
    return data;
  };
  const set = async (data: SignalDataSet) => {
    const tasks: Promise<void>[] = [];
    for (const [category, entries] of Object.entries(data)) {
      for (const [id, value] of Object.entries(entries ?? {})) {
        const file = fileName(`${category}-${id}.json`);
        tasks.push(value ? write(file, value) : remove(file));
      }
    }
    await Promise.all(tasks);
  };
  return { state: { creds, keys: { get, set } }, saveCreds: () => write(CREDS, creds) };
}
