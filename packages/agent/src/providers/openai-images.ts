import { z } from "zod";

/**
 * Images in an OpenAI-compatible answer. OpenAI's own Chat Completions API
 * returns no images (they come from its Images and Responses APIs); gateways
 * that serve image-generating models through it (OpenRouter, Vercel AI
 * Gateway, LiteLLM) put them in `message.images` / `delta.images` as
 * `{ type: "image_url", image_url: { url: "data:image/png;base64,..." } }`.
 * Only `data:` URLs are taken (a remote URL would be a fetch on the model's say-so).
 */
const ImagesSchema = z.looseObject({
  images: z
    .array(z.looseObject({ type: z.string().optional(), image_url: z.looseObject({ url: z.string() }) }))
    .optional(),
});

const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]+)$/i;

/** The images a streamed delta (or a whole message) carries, decoded. */
export function imagesOf(delta: unknown): Array<{ mime: string; data: Uint8Array }> {
  const parsed = ImagesSchema.safeParse(delta);
  if (!parsed.success) return [];
  return (parsed.data.images ?? []).flatMap((image) => {
    const match = DATA_URL.exec(image.image_url.url);
    if (!match) return [];
    return [{ mime: (match[1] ?? "image/png").toLowerCase(), data: Buffer.from(match[2] ?? "", "base64") }];
  });
}
