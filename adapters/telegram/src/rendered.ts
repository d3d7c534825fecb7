import { renderTelegramHtml } from "./render.js";

/** How many characters (markdown and HTML together) the measured-but-not-sent renders may hold. */
const BUDGET_CHARS = 1_000_000;

/**
 * Renders of segments between their measuring and their sending. A segment is
 * rendered when the reply dispatcher measures it (to fit Telegram's limit) and
 * again when it is sent; the render is a pure function of the markdown, so
 * the send takes the measured one instead of lexing the text a second time.
 * A render is taken once (a retried send renders again); the oldest go first
 * beyond the budget (segments measured here and sent by another process).
 */
export class MeasuredRenders {
  readonly #html = new Map<string, string>();
  #chars = 0;

  constructor(private readonly budgetChars = BUDGET_CHARS) {}

  /** The HTML of `markdown`, kept for the send that follows. */
  measure(markdown: string): string {
    const known = this.#html.get(markdown);
    if (known !== undefined) return known;
    const html = renderTelegramHtml(markdown);
    const size = markdown.length + html.length;
    if (size > this.budgetChars) return html;
    this.#html.set(markdown, html);
    this.#chars += size;
    for (const [oldest, oldHtml] of this.#html) {
      if (this.#chars <= this.budgetChars) break;
      this.#html.delete(oldest);
      this.#chars -= oldest.length + oldHtml.length;
    }
    return html;
  }

  /** The HTML of `markdown` to send: the measured render (forgotten now), or a fresh one. */
  take(markdown: string): string {
    const known = this.#html.get(markdown);
    if (known === undefined) return renderTelegramHtml(markdown);
    this.#html.delete(markdown);
    this.#chars -= markdown.length + known.length;
    return known;
  }

  /** How many renders are kept (for tests). */
  get size(): number {
    return this.#html.size;
  }
}
