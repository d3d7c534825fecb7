import type { z } from "zod";

type Def = z.core.$ZodTypeDef & Record<string, unknown>;

const defOf = (schema: z.core.$ZodType): Def => schema._zod.def as Def;

/** The schemas a value at `schema` may be checked by, with wrappers (default, optional, pipe...) taken off. */
function unwrapped(schema: z.core.$ZodType, depth = 0): z.core.$ZodType[] {
  if (depth > 20) return [];
  const def = defOf(schema);
  const inner =
    (def.innerType as z.core.$ZodType | undefined) ??
    (def.type === "pipe" ? (def.in as z.core.$ZodType) : undefined) ??
    (def.type === "lazy" ? (def.getter as () => z.core.$ZodType)() : undefined);
  if (inner) return unwrapped(inner, depth + 1);
  if (def.type === "union") return (def.options as z.core.$ZodType[]).flatMap((o) => unwrapped(o, depth + 1));
  if (def.type === "intersection")
    return [def.left as z.core.$ZodType, def.right as z.core.$ZodType].flatMap((o) =>
      unwrapped(o, depth + 1),
    );
  return [schema];
}

/** The schemas one step down `segment` (an object's key, a record's value, an array's element). */
function child(schema: z.core.$ZodType, segment: PropertyKey): z.core.$ZodType[] {
  const def = defOf(schema);
  if (def.type === "object") {
    const shape = def.shape as Record<string, z.core.$ZodType>;
    return typeof segment === "string" && Object.hasOwn(shape, segment)
      ? [shape[segment] as z.core.$ZodType]
      : [];
  }
  if (def.type === "record") return [def.valueType as z.core.$ZodType];
  if (def.type === "array") return typeof segment === "number" ? [def.element as z.core.$ZodType] : [];
  return [];
}

/**
 * The keys an object at `path` in `schema` accepts, as written in a file (for
 * a "did you mean" on an unknown key); undefined when the schema does not say
 * (no object there, or a record with open keys).
 */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let here = unwrapped(schema);
  for (const segment of path) here = here.flatMap((s) => child(s, segment)).flatMap((s) => unwrapped(s));
  const keys = here.flatMap((s) => {
    const def = defOf(s);
    return def.type === "object" ? Object.keys(def.shape as Record<string, unknown>) : [];
  });
  return keys.length ? [...new Set(keys)] : undefined;
}
