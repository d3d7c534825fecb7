import { Agent, request } from "undici";

/** The `fetch` grammY calls the Bot API with: it reads nothing of the answer but its JSON body. */
export type BotApiFetch = (url: string, init: BotApiRequestInit) => Promise<{ json(): Promise<unknown> }>;

/** What grammY's client passes to its `fetch` (JSON text, or a multipart stream for uploads). */
export interface BotApiRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | NodeJS.ReadableStream;
  signal?: AbortSignal;
}

/**
 * grammY's Bot API calls over undici's `request` on kept-alive connections, instead of its default
 * node-fetch over `http`: 10-40 µs less CPU per call (measured against the fake Bot API), and the hub
 * makes one or two per answer. grammY reads only `json()` of the answer, for every status (the Bot API
 * answers errors as JSON too; anything else fails as grammY's HttpError). `connections` caps the kept
 * connections (polling takes one of its own: one poller is one connection, and no send waits behind a
 * long poll).
 */
export function botApiFetch(options: { connections?: number } = {}): BotApiFetch {
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    ...(options.connections ? { connections: options.connections } : {}),
  });
  return async (url, init) => {
    try {
      const { body } = await request(url, {
        method: (init.method ?? "GET") as "GET" | "POST",
        ...(init.headers ? { headers: init.headers } : {}),
        ...(init.body === undefined ? {} : { body: init.body as string }),
        ...(init.signal ? { signal: init.signal } : {}),
        dispatcher,
      });
      return { json: () => body.json() };
    } catch (error) {
      throw requestFailed(url, error);
    }
  };
}

// As node-fetch words it: the URL says which method failed (describeTelegramError cuts the token out of
// it), the reason says why; the network error's code stays readable.
function requestFailed(url: string, error: unknown): Error {
  if (!(error instanceof Error) || error.name === "AbortError") return error as Error;
  const failed = new Error(`request to ${url} failed, reason: ${error.message}`, { cause: error });
  const code = (error as NodeJS.ErrnoException).code;
  if (code) Object.assign(failed, { code });
  return failed;
}
