import { createHash, type Hash } from "node:crypto";

/**
 * How much of a run's answer was handed to delivery (so the user has it or will): the length and
 * SHA-1 of its text blocks joined by blank lines. Kept in the run record after each block, so an
 * attempt resumed after a crash knows what the interrupted one already said.
 */
export interface ShownPrefix {
  chars: number;
  sig: string;
}

const JOIN = "\n\n";

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

/** Tracks the text a reply has shown so far, block by block, and its `ShownPrefix`. */
export class ShownText {
  #chars = 0;
  readonly #hash: Hash = createHash("sha1");

  /** Adds a block; returns what is shown now. */
  add(block: string): ShownPrefix {
    const piece = this.#chars === 0 ? block : `${JOIN}${block}`;
    this.#hash.update(piece);
    this.#chars += piece.length;
    return { chars: this.#chars, sig: this.#hash.copy().digest("hex") };
  }
}

/**
 * A resumed attempt's blocks, held back until they are known to repeat what the interrupted attempt
 * showed or not: once they cover `shown.chars` characters, blocks whose text is exactly that prefix
 * are dropped (the user has them; a block that runs past it keeps only the rest) and the others
 * pass. Anything that cannot be matched passes whole: a repeated line is better than a lost one.
 */
export class ShownPrefixFilter {
  #held: string[] = [];
  #text = "";
  #decided = false;

  constructor(private readonly shown: ShownPrefix) {}

  /** Whether blocks are still held: not yet known to repeat what the interrupted attempt showed, or not. */
  get undecided(): boolean {
    return !this.#decided;
  }

  /** The blocks to push now (none while the prefix is still undecided). */
  take(blocks: string[]): string[] {
    return pushesOf(this.decide(blocks));
  }

  /** Ends the holding (the stream ended or paused for a tool): what is held passes unmatched. */
  release(): string[] {
    return pushesOf(this.releaseDecided());
  }

  /** As `take`, with each decided block beside what is pushed of it (nothing when the user has it). */
  decide(blocks: string[]): DecidedBlock[] {
    if (this.#decided) return blocks.map(passed);
    for (const block of blocks) {
      this.#held.push(block);
      this.#text += this.#text === "" ? block : `${JOIN}${block}`;
    }
    if (this.#text.length < this.shown.chars) return [];
    return this.#match();
  }

  /** As `release`, with each block beside what is pushed of it. */
  releaseDecided(): DecidedBlock[] {
    if (this.#decided) return [];
    this.#decided = true;
    const held = this.#held;
    this.#held = [];
    return held.map(passed);
  }

  #match(): DecidedBlock[] {
    const { chars, sig } = this.shown;
    if (sha1(this.#text.slice(0, chars)) !== sig) return this.releaseDecided();
    const held = this.#held;
    this.#decided = true;
    this.#held = [];
    // Blocks inside the prefix are shown already; one that runs past its end keeps only what is new.
    let start = 0;
    return held.map((block) => {
      const end = start + block.length;
      const rest =
        end <= chars ? "" : start >= chars ? block : block.slice(chars - start).replace(/^\s+/, "");
      start = end + JOIN.length;
      return { block, push: rest === "" ? undefined : rest };
    });
  }
}

/** One block of an answer, decided: what is pushed of it (`undefined`: the user has it already). */
export interface DecidedBlock {
  block: string;
  push: string | undefined;
}

/** A block pushed whole. */
export function passed(block: string): DecidedBlock {
  return { block, push: block };
}

function pushesOf(decided: DecidedBlock[]): string[] {
  return decided.flatMap((d) => (d.push === undefined ? [] : [d.push]));
}
