import { createReadStream } from "node:fs";
import { loadOnce } from "../load-once.js";

/** Turns a voice note or an audio file into text. */
export type Transcriber = (
  file: { path: string; name: string; mime: string },
  signal: AbortSignal,
) => Promise<string>;

/** Where the transcription model lives: an OpenAI-compatible provider and the model name. */
export interface OpenAITranscriberOptions {
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  model: string;
  /** Longest wait for one transcription (default 120 s). */
  timeoutMs?: number;
}

/**
 * Transcribes through an OpenAI-compatible `POST /audio/transcriptions`
 * (multipart: the file and the model, e.g. `whisper-1`), as OpenAI, Groq,
 * LocalAI and faster-whisper servers offer it. The OpenAI SDK is loaded at the first transcription.
 */
export function openAITranscriber(o: OpenAITranscriberOptions): Transcriber {
  // A failed load is tried again at the next file.
  const sdk = loadOnce(async () => {
    const { default: OpenAI, toFile } = await import("openai");
    const client = new OpenAI({
      // The key is never sent to a server the operator did not name together with it.
      apiKey: o.apiKey ?? (o.baseUrl ? "none" : process.env.OPENAI_API_KEY),
      ...(o.baseUrl ? { baseURL: o.baseUrl } : {}),
      timeout: o.timeoutMs ?? 120_000,
      maxRetries: 0,
    });
    return { client, toFile };
  });
  return async (file, signal) => {
    const { client, toFile } = await sdk();
    const upload = await toFile(createReadStream(file.path), file.name, { type: file.mime });
    const result = await client.audio.transcriptions.create({ file: upload, model: o.model }, { signal });
    return result.text.trim();
  };
}
