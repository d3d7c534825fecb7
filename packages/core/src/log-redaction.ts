/** What a redacted value is replaced with. */
export const REDACTION_CENSOR = "[redacted]";

/** Paths of log fields replaced with `REDACTION_CENSOR` wherever they appear (pino's path syntax). */
export const REDACTED_PATHS = [
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
  "botToken",
  "*.botToken",
  "auth.token",
  "password",
  "*.password",
  "params.auth",
  "headers.authorization",
  "*.headers.authorization",
  "config.gateway.token",
  "config.models.providers.*.apiKey",
];

type Path = readonly string[];

/** The paths, by where they start: a top-level key censored whole, any top-level value, or one key's value. */
interface PathTable {
  whole: Set<string>;
  everywhere: Path[];
  under: Map<string, Path[]>;
}

function tableOf(paths: readonly string[]): PathTable {
  const table: PathTable = { whole: new Set(), everywhere: [], under: new Map() };
  for (const path of paths) {
    const [first = "", ...rest] = path.split(".");
    if (rest.length === 0) table.whole.add(first);
    else if (first === "*") table.everywhere.push(rest);
    else table.under.set(first, [...(table.under.get(first) ?? []), rest]);
  }
  return table;
}

const TABLE = tableOf(REDACTED_PATHS);

/** A copy of `value` (same prototype) with `key` set to `next`. */
function withKey(value: object, key: string, next: unknown): object {
  const copy = Array.isArray(value)
    ? value.slice()
    : Object.assign(Object.create(Object.getPrototypeOf(value)), value);
  copy[key] = next;
  return copy;
}

/**
 * `value` with the field at `path` censored, copied along the path only when something is censored
 * (the caller's object is never changed). As pino's redaction does: a field is censored only when
 * it exists (an own property), a `*` step goes into every key or array item, and a path through
 * something that is not an object ends there.
 */
function censorPath(value: unknown, path: Path, at = 0): unknown {
  if (typeof value !== "object" || value === null) return value;
  const step = path[at] as string;
  const record = value as Record<string, unknown>;
  if (at === path.length - 1)
    return Object.hasOwn(record, step) ? withKey(value, step, REDACTION_CENSOR) : value;
  if (step === "*") {
    let out: object = value;
    for (const key in record) {
      const next = censorPath(record[key], path, at + 1);
      if (next !== record[key]) out = withKey(out, key, next);
    }
    return out;
  }
  if (!(step in record)) return value;
  const next = censorPath(record[step], path, at + 1);
  return next === record[step] ? value : withKey(value, step, next);
}

/** One top-level field's value with every path that applies to it censored. */
export function redactLogValue(key: string, value: unknown): unknown {
  if (TABLE.whole.has(key)) return REDACTION_CENSOR;
  if (typeof value !== "object" || value === null) return value;
  let out: unknown = value;
  for (const path of TABLE.everywhere) out = censorPath(out, path);
  for (const path of TABLE.under.get(key) ?? []) out = censorPath(out, path);
  return out;
}

/**
 * A log object (or a child logger's bindings) with `REDACTED_PATHS` censored: the object itself
 * when nothing is to be censored (the common case: no copy), else a shallow copy. `err` is left to
 * the logger's error serializer, which censors what the serialized error holds.
 */
export function redactLogFields<T extends Record<string, unknown>>(fields: T): T {
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    if (key === "err" || !Object.hasOwn(fields, key)) continue;
    const value = fields[key];
    if (value === undefined) continue;
    const next = redactLogValue(key, value);
    if (next !== value) {
      out ??= { ...fields };
      out[key] = next;
    }
  }
  return (out as T | undefined) ?? fields;
}
