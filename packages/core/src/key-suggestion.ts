/**
 * Edit distance between two words (optimal string alignment: an insertion, a
 * deletion, a substitution or two neighbours swapped each count one), case
 * ignored, so `prot` is one step from `port` and `Bottoken` none from `botToken`.
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= s.length; i++) {
    const row = rows[i] as number[];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        row[j] = Math.min(at(i, j), at(i - 2, j - 2) + 1);
    }
  }
  return at(s.length, t.length);
}

/**
 * The known keys closest to a key nobody knows, when it looks like a typo of
 * them: at most one edit away for short keys, two from five characters on.
 * Several only when they are equally close; none when nothing is close.
 */
export function closestKeys(unknown: string, known: Iterable<string>): string[] {
  const limit = unknown.length >= 5 ? 2 : 1;
  let best = limit + 1;
  let closest: string[] = [];
  for (const key of known) {
    const distance = editDistance(unknown, key);
    if (distance < best) [best, closest] = [distance, [key]];
    else if (distance === best) closest.push(key);
  }
  return closest;
}

/**
 * "did you mean `channels`?" for one unknown key, or one clause naming each
 * key's likely meaning for several (`channels` for "channel", `gateway` for
 * "gatway"); undefined when none of them is close to a known key.
 */
export function didYouMean(unknown: readonly string[], known: Iterable<string>): string | undefined {
  const keys = [...known];
  const hints = unknown.flatMap((key) => {
    const closest = closestKeys(key, keys);
    return closest.length ? [{ key, guess: closest.map((k) => `\`${k}\``).join(" or ") }] : [];
  });
  if (hints.length === 0) return undefined;
  if (unknown.length === 1) return `did you mean ${hints[0]?.guess}?`;
  return `did you mean ${hints.map((h) => `${h.guess} for "${h.key}"`).join(", ")}?`;
}
