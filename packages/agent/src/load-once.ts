/**
 * `load` run at the first call and its result kept for every later one; a load that failed is not kept (the
 * next call tries again), so a module that was missing once is not missing for ever.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };
}
