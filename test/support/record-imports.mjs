// `node --import <this file>`: appends the URL of every module the process resolves from node_modules to
// the file HUB_IMPORTS_FILE names, one per line (which packages a process loaded: `sdks-loaded.test.ts`).
import { register } from "node:module";

if (process.env.HUB_IMPORTS_FILE)
  register("./record-imports-hooks.mjs", import.meta.url, { data: { file: process.env.HUB_IMPORTS_FILE } });
