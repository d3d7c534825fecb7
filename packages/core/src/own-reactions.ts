/**
 * The reaction a bot set on each message, for platforms that remove a reaction by naming it (Discord,
 * Slack): setting another first takes the previous one off, `null` takes it off. Remembered in the
 * process that set it (the run that adds it also removes it), bounded: the oldest entries go first.
 */
export class OwnReactions<At> {
  readonly #set = new Map<string, string>();

  constructor(
    /** Adds (`on`) or removes one reaction of the bot on the platform. */
    private readonly apply: (at: At, emoji: string, on: boolean) => Promise<void>,
    private readonly max = 1000,
  ) {}

  /**
   * Sets `emoji` on the message `key` (found on the platform by `at`), or removes the bot's reaction
   * (`null`). `previous` names the bot's reaction when this process did not set it (after a restart).
   */
  async react(key: string, at: At, emoji: string | null, previous = this.#set.get(key)): Promise<void> {
    if (previous !== undefined && previous !== emoji) await this.apply(at, previous, false);
    this.#set.delete(key);
    if (emoji === null) return;
    await this.apply(at, emoji, true);
    if (this.#set.size >= this.max) this.#set.delete(this.#set.keys().next().value ?? "");
    this.#set.set(key, emoji);
  }
}
