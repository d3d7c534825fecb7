/**
 * The fields of an unreadable payload that identify it in a drop log line, renamed (`{ id: "messageId" }`):
 * each only where the payload holds it as a plain string or number, so nothing else of it is logged.
 */
export function identifyingFields(
  raw: unknown,
  names: Readonly<Record<string, string>>,
): Record<string, string | number> {
  const found: Record<string, string | number> = {};
  if (typeof raw !== "object" || raw === null) return found;
  for (const [field, name] of Object.entries(names)) {
    const value: unknown = (raw as Record<string, unknown>)[field];
    if (typeof value === "string" || typeof value === "number") found[name] = value;
  }
  return found;
}
