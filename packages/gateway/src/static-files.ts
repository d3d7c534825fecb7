import { readFile } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { extname, join, normalize } from "node:path";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** Serves one file of the web chat's folder (`/` is index.html); never a path outside it. */
export async function serveStaticFile(root: string, pathname: string, res: ServerResponse): Promise<void> {
  const rel = pathname === "/" ? "index.html" : normalize(pathname).replace(/^([/\\])+/, "");
  if (rel.includes("..")) {
    res.writeHead(400).end("bad path");
    return;
  }
  try {
    const body = await readFile(join(root, rel));
    res
      .writeHead(200, {
        "content-type": CONTENT_TYPES[extname(rel)] ?? "application/octet-stream",
        "cache-control": "no-cache",
      })
      .end(body);
  } catch {
    res.writeHead(404).end("not found");
  }
}
