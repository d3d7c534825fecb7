import { createHash, timingSafeEqual } from "node:crypto";

/** Compares secrets in constant time (hashing first, so lengths do not leak either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}
