import { type FSWatcher, watch } from "node:fs";
import { type BootstrapLimits, loadWorkspaceBootstrap, type WorkspaceBootstrap } from "./bootstrap.js";

/** How long a loaded workspace is used without reading it again, where no change was seen. */
const MAX_AGE_MS = 5_000;

interface Loaded {
  at: number;
  bootstrap: Promise<WorkspaceBootstrap>;
}

const loaded = new Map<string, Loaded>();
const watchers = new Map<string, FSWatcher | undefined>();

/**
 * The workspace files for the system prompt, read once and reused: a change
 * in the workspace directory (a file written, replaced or removed, seen through
 * a file-system watch) makes the next run read them again, and so does age
 * (`MAX_AGE_MS`), for file systems where a watch sees nothing (network mounts,
 * another machine) and for a directory created later.
 */
export function cachedWorkspaceBootstrap(
  workspaceDir: string,
  limits: BootstrapLimits,
): Promise<WorkspaceBootstrap> {
  const key = `${workspaceDir}\0${limits.perFileChars}\0${limits.totalChars}`;
  const now = Date.now();
  const hit = loaded.get(key);
  if (hit && now - hit.at < MAX_AGE_MS) return hit.bootstrap;
  // Watched before reading, so a change during the read is not missed.
  watchWorkspace(workspaceDir);
  const bootstrap = loadWorkspaceBootstrap(workspaceDir, limits);
  loaded.set(key, { at: now, bootstrap });
  bootstrap.catch(() => loaded.delete(key));
  return bootstrap;
}

/** Makes the next run read the workspace files again (this process wrote one of them). */
export function forgetWorkspaceBootstrap(workspaceDir: string): void {
  for (const key of loaded.keys()) if (key.startsWith(`${workspaceDir}\0`)) loaded.delete(key);
}

function watchWorkspace(workspaceDir: string): void {
  if (watchers.get(workspaceDir)) return;
  try {
    const watcher = watch(workspaceDir, { persistent: false }, () => forgetWorkspaceBootstrap(workspaceDir));
    // A watch that fails later (the directory removed) leaves only the age check; a later load watches again.
    watcher.on("error", () => {
      watcher.close();
      watchers.delete(workspaceDir);
      forgetWorkspaceBootstrap(workspaceDir);
    });
    watchers.set(workspaceDir, watcher);
  } catch {
    // No directory (yet) or no watch support: the age check alone.
    watchers.delete(workspaceDir);
  }
}
