import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ChannelLinkCode } from "@hub/core";
import QRCode from "qrcode";
import { z } from "zod";
import { writeFileAtomic } from "./auth-state.js";

const FILE = "link.json";
/** A code older than this is stale (QR codes live 60 s at most; a crashed login leaves its last one). */
const MAX_AGE_MS = 70_000;

const LinkFileSchema = z.object({
  qr: z.string().min(1).max(2048).optional(),
  pairingCode: z.string().min(1).max(32).optional(),
  at: z.number(),
});

/** The code a running login shows, as `hub channels login` writes it beside the credentials. */
export type PendingLink = { qr?: string | undefined; pairingCode?: string | undefined };

/**
 * Publishes the login's current code (or clears it) in the credentials
 * folder, so the hub serving the owner's web chat can show it there too.
 */
export async function publishLinkCode(authDir: string, link: PendingLink | undefined): Promise<void> {
  const path = join(authDir, FILE);
  if (!link) return void (await rm(path, { force: true }));
  await writeFileAtomic(path, JSON.stringify({ ...link, at: Date.now() }));
}

let cached: { qr: string; image: string } | undefined;

/** The code a login in progress shows (QR as an image), or undefined when none is fresh. */
export async function readLinkCode(authDir: string, now = Date.now()): Promise<ChannelLinkCode | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(join(authDir, FILE), "utf8"));
  } catch {
    return undefined;
  }
  const parsed = LinkFileSchema.safeParse(raw);
  if (!parsed.success || now - parsed.data.at > MAX_AGE_MS) return undefined;
  const { qr, pairingCode, at } = parsed.data;
  if (qr && cached?.qr !== qr) cached = { qr, image: await QRCode.toDataURL(qr, { margin: 2, width: 264 }) };
  return { ...(qr && cached ? { qrImage: cached.image } : {}), ...(pairingCode ? { pairingCode } : {}), at };
}
