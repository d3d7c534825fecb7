// The module hooks of `record-imports.mjs` (they run on the loader's own thread).
import { appendFileSync } from "node:fs";

let file;

/** Receives the file to append to. */
export function initialize(data) {
  file = data.file;
}

/** Records each resolved module that lives in node_modules. */
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.includes("/node_modules/")) appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
