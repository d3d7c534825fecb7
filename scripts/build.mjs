#!/usr/bin/env node
// Compiles the hub to plain JavaScript for production (the Docker image runs it
// with node, no tsx): `node scripts/build.mjs <outDir>` writes <outDir> with the
// workspace's layout: compiled sources, their non-TypeScript files (Lua scripts,
// the web page), every workspace package.json pointing at .js, and the lockfile,
// ready for `pnpm install --prod --frozen-lockfile` there.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(process.argv[2] ?? "dist");
rmSync(out, { recursive: true, force: true });

const tsc = spawnSync(
  process.execPath,
  [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json"), "--outDir", out],
  { stdio: "inherit" },
);
if (tsc.status !== 0) {
  console.error("build: the TypeScript compile failed; see above.");
  process.exit(1);
}

// The workspace's packages, as pnpm-workspace.yaml lists them.
const workspace = ["packages", "adapters", "apps"].flatMap((group) =>
  readdirSync(join(root, group)).map((name) => join(group, name)),
);
workspace.push("test/fakes", "test/conformance");

function copyAssets(dir) {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(path);
    else if (!entry.name.endsWith(".ts")) cpSync(join(root, path), join(out, path));
  }
}

for (const pkg of workspace) {
  const manifest = join(root, pkg, "package.json");
  if (!existsSync(manifest)) continue;
  mkdirSync(join(out, pkg), { recursive: true });
  const json = JSON.parse(readFileSync(manifest, "utf8"));
  for (const [key, target] of Object.entries(json.exports ?? {}))
    json.exports[key] = String(target).replace(/\.ts$/, ".js");
  writeFileSync(join(out, pkg, "package.json"), `${JSON.stringify(json, null, 2)}\n`);
  if (pkg.startsWith("test/")) continue;
  for (const dir of ["src", "public"]) if (existsSync(join(root, pkg, dir))) copyAssets(join(pkg, dir));
}
// patches/: the lockfile's patched dependencies, which pnpm reads even when a production install skips them.
for (const file of ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", "patches"])
  cpSync(join(root, file), join(out, file), { recursive: true });
console.log(
  `build: compiled hub in ${relative(process.cwd(), out) || "."} (run: node --max-semi-space-size=64 apps/hub/src/main.js start)`,
);
