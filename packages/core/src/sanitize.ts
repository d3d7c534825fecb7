/**
 * Role markers a user could type to make their text look like it came from the
 * system or the assistant. Matched at the start of a line, ignoring case,
 * leading whitespace and markdown decoration.
 */
const ROLE_MARKER =
  /^([\s>*_`#-]*)(\[\s*(system|assistant|developer|tool)\s*\]|<\s*\/?\s*(system|assistant|developer|tool)\s*>|(system|assistant|developer)\s*:)/i;

/**
 * Neutralizes spoofed role markers in user text: a line that starts with
 * `System:`, `[System]`, `[Assistant]`, `<system>` and the like is prefixed
 * so it reads as quoted user text and can never pose as ours.
 */
export function neutralizeRoleMarkers(text: string): string {
  return text
    .split("\n")
    .map((line) =>
      ROLE_MARKER.test(line)
        ? line.replace(ROLE_MARKER, (_m, lead: string, marker: string) => `${lead}(user wrote) ${marker}`)
        : line,
    )
    .join("\n");
}

/** Normalizes line endings to `\n` and strips NUL and other C0 control characters except tab and newline. */
export function normalizeText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, "");
}
