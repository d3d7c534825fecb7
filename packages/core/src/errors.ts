/**
 * An error a user or operator can hit. `code` is stable and machine-readable;
 * `message` is a full sentence that says what to do.
 */
export class HubError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "HubError";
  }
}

/** Formats zod issues as "path: message" lines, for errors shown to operators. */
export function formatIssues(
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>,
): string {
  return issues
    .map((issue) => `${issue.path.length ? issue.path.map(String).join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}
