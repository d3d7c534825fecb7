import type { AdapterFields, InboundResult } from "@hub/core";

/**
 * How long an album waits for its next item before it is taken. Polling hands the adapter a batch's updates
 * in one turn and asks for the next batch only once they are settled, so items of one batch meet at once and
 * none can come while it waits: a wait longer than that would only hold intake for every chat.
 */
export const ALBUM_QUIET_MS = 20;
/** The longest an album's first item waits for the rest. */
export const ALBUM_MAX_WAIT_MS = 100;

// One album's items so far; `whole` resolves with them merged when it is taken.
class OpenAlbum {
  readonly items: AdapterFields[];
  readonly openedAt = Date.now();
  readonly whole: Promise<AdapterFields>;
  timer: NodeJS.Timeout | undefined;
  result: Promise<InboundResult> | undefined;
  #resolve: (fields: AdapterFields) => void = () => {};

  constructor(first: AdapterFields) {
    this.items = [first];
    this.whole = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  take(): void {
    this.#resolve(mergeAlbum(this.items));
  }
}

/**
 * The items of a Telegram album (messages sharing a `media_group_id`, each its own update) taken as one
 * message: one run that sees every file, with the caption whichever item carries it, answered once. The first
 * item opens the album and hands `submit` the whole album to come (so the album keeps the first item's place
 * in its chat's order); later items join it while it is open, and every item's update gets the album's
 * result, so polling's offset passes none of them before the album is admitted (a crash meanwhile has
 * Telegram send them all again). Polling only: items of one album that come in different batches are albums
 * of their own, and a webhook's updates are each a message.
 */
export class Albums {
  readonly #open = new Map<string, OpenAlbum>();

  constructor(
    private readonly quietMs = ALBUM_QUIET_MS,
    private readonly maxWaitMs = ALBUM_MAX_WAIT_MS,
  ) {}

  /** Adds an item of album `key` (chat and media_group_id); resolves with the album's admission result. */
  add(
    key: string,
    fields: AdapterFields,
    submit: (whole: Promise<AdapterFields>) => Promise<InboundResult>,
  ): Promise<InboundResult> {
    let album = this.#open.get(key);
    if (album) album.items.push(fields);
    else {
      album = new OpenAlbum(fields);
      this.#open.set(key, album);
      album.result = submit(album.whole);
    }
    this.#rearm(key, album);
    return album.result as Promise<InboundResult>;
  }

  // Taken once no item came for `quietMs`, and at the latest `maxWaitMs` after it opened.
  #rearm(key: string, album: OpenAlbum): void {
    clearTimeout(album.timer);
    const left = this.maxWaitMs - (Date.now() - album.openedAt);
    album.timer = setTimeout(
      () => {
        this.#open.delete(key);
        album.take();
      },
      Math.max(0, Math.min(this.quietMs, left)),
    );
  }
}

/** One message of an album's items: the first item's identity and reply, every item's files and caption. */
export function mergeAlbum(items: AdapterFields[]): AdapterFields {
  // An edit's id carries its edit mark after the message id: ordered by the message id.
  const sorted = [...items].sort(
    (a, b) => Number.parseInt(a.messageId, 10) - Number.parseInt(b.messageId, 10),
  );
  const first = sorted[0] as AdapterFields;
  const replyTo = sorted.find((item) => item.replyTo)?.replyTo;
  return {
    ...first,
    body: sorted
      .map((item) => item.body)
      .filter((body) => body.trim() !== "")
      .join("\n\n"),
    wasMentioned: sorted.some((item) => item.wasMentioned === true),
    media: sorted.flatMap((item) => item.media ?? []),
    ...(replyTo ? { replyTo } : {}),
  };
}
