/** Shorter values are not treated as secrets: redacting "k" would mangle every log line, and they guard nothing. */
export const MIN_SECRET_LENGTH = 6;

/** What a redacted secret is replaced with. */
export const REDACTED = "[redacted]";

/**
 * The configured secrets of this process, and the one place that removes them
 * from text. Each secret is also matched in the forms it takes inside a log
 * line: JSON-escaped (a quote or backslash in it) and URL-encoded (a token in
 * a request URL). Secrets can be added later (a token generated at start).
 */
export class SecretRedactor {
  readonly #forms = new Set<string>();

  constructor(secrets: Iterable<string> = []) {
    this.add(secrets);
  }

  /** Adds secrets; values shorter than `MIN_SECRET_LENGTH` are ignored. */
  add(secrets: Iterable<string>): void {
    for (const secret of secrets) {
      if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) continue;
      this.#forms.add(secret);
      this.#forms.add(JSON.stringify(secret).slice(1, -1));
      this.#forms.add(encodeURIComponent(secret));
    }
  }

  /** How many secrets (in all their forms) are redacted. */
  get size(): number {
    return this.#forms.size;
  }

  /** `text` with every occurrence of every secret replaced by `[redacted]`. */
  redact(text: string): string {
    let out = text;
    // Longest first, so a secret containing another is removed whole.
    for (const form of [...this.#forms].sort((a, b) => b.length - a.length))
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }
}
