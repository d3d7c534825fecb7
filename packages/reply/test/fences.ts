// Checks and helpers shared by the chunker and block streamer tests.

const FENCE = /^[^\S\n]*(`{3,}|~{3,})([^\n]*)$/;

/** Fences balanced: every opener has its closer within the same piece. */
export function fencesBalanced(piece: string): boolean {
  let open: string | null = null;
  for (const line of piece.split("\n")) {
    const m = FENCE.exec(line);
    if (m === null) continue;
    const marker = m[1]!;
    const rest = m[2]!.trim();
    if (open === null) {
      if (!(marker[0] === "`" && rest.includes("`"))) open = marker;
    } else if (marker[0] === open[0] && marker.length >= open.length && rest === "") {
      open = null;
    }
  }
  return open === null;
}

/** Content with fence lines (original or added by a cut) and all whitespace removed. */
export function content(text: string): string {
  return text
    .split("\n")
    .filter((line) => !FENCE.test(line))
    .join("")
    .replace(/\s+/g, "");
}

/** Small seeded PRNG so property-style loops are reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
