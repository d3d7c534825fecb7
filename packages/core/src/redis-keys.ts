/**
 * The key prefix with a Redis Cluster hash tag: `hub` becomes `{hub}`, and a
 * prefix that carries a tag already (`{hub}`, `{team}:hub`) is kept. Every key
 * of the hub starts with the prefix, so every key of one installation hashes to
 * one slot: the hub's scripts and multi-key commands (admission, fenced pushes,
 * the mailbox's shared schedule) may touch any of its keys together, on a
 * single Redis and on a Redis Cluster alike.
 */
export function hashTaggedPrefix(prefix: string): string {
  return /\{[^{}]+\}/.test(prefix) ? prefix : `{${prefix}}`;
}
