import { join, resolve } from "node:path";

/** Where an account's credentials live: `authDir` (relative to the state dir) or `whatsapp/<accountId>`. */
export function authDirOf(stateDir: string, accountId: string, authDir?: string): string {
  return resolve(stateDir, authDir ?? join("whatsapp", accountId));
}
