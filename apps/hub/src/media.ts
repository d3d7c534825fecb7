import { join } from "node:path";
import { MediaPreparer, MediaStore, openAITranscriber, type Transcriber } from "@hub/agent";
import { type HubConfig, HubError } from "@hub/core";
import type { AdapterRegistry } from "./adapter-registry.js";
import { modelInputsOf } from "./models.js";
import { startSweeper } from "./outbox.js";
import type { HubBase } from "./stages/base.js";

/**
 * The agent's attachment handling from config: downloads go through the
 * adapter of the message's account in this process (Telegram, Discord and
 * Slack need only their token, so any process with the channel configured
 * can fetch; WhatsApp only the process holding the account's connection) into
 * `<state dir>/media`, kept `media.retentionHours` and at most
 * `media.maxStoreBytes`; only the small platform reference travels in Redis.
 */
export function buildMediaPreparer(
  config: HubConfig,
  stateDir: string,
  adapters: AdapterRegistry,
  store: MediaStore = mediaStoreOf(config, stateDir),
): MediaPreparer {
  return new MediaPreparer({
    store,
    fetcher: (ctx) => {
      const adapter = adapters.forAccount(ctx.channel, ctx.accountId);
      return adapter?.fetchMedia ? (media, options) => adapter.fetchMedia!(media, options) : undefined;
    },
    maxAttachmentBytes: config.limits.maxAttachmentBytes,
    maxDocumentChars: config.media.maxDocumentChars,
    // About a quarter of the context window (4 characters a token).
    documentBudgetChars: config.agent.contextWindowTokens,
    inputs: modelInputsOf(config, config.agent.model),
    transcribe: transcriberOf(config),
  });
}

/** The media store of the agent role, swept at start and every 15 minutes (a save also prunes). */
export function startMediaStore(base: HubBase): MediaStore {
  const store = mediaStoreOf(base.config, base.stateDir);
  startSweeper(base, "media", "expired downloaded attachments", () => store.prune());
  return store;
}

/** `<state dir>/media`, kept `media.retentionHours` and at most `media.maxStoreBytes`. */
export function mediaStoreOf(config: HubConfig, stateDir: string): MediaStore {
  return new MediaStore(join(stateDir, "media"), {
    maxAgeMs: config.media.retentionHours * 3_600_000,
    maxTotalBytes: config.media.maxStoreBytes,
  });
}

/** The transcriber of `agent.transcriptionModel`, checked at start (an OpenAI-compatible provider). */
function transcriberOf(config: HubConfig): Transcriber | undefined {
  const ref = config.agent.transcriptionModel;
  if (!ref) return undefined;
  const slash = ref.indexOf("/");
  const name = ref.slice(0, slash);
  const provider = config.models.providers[name];
  if (provider?.api !== "openai")
    throw new HubError(
      "transcription_model_unknown",
      `agent.transcriptionModel "${ref}" needs models.providers.${name} with an OpenAI-compatible API (api: "openai", baseUrl, apiKey).`,
    );
  const apiKey = provider.apiKey ?? provider.apiKeys[0];
  // The SDK is loaded at the first voice note: a missing key is said now, not on every note.
  if (!apiKey && !provider.baseUrl && !process.env.OPENAI_API_KEY)
    throw new HubError(
      "transcription_key_missing",
      `agent.transcriptionModel "${ref}" needs an API key; set models.providers.${name}.apiKey or OPENAI_API_KEY.`,
    );
  return openAITranscriber({ baseUrl: provider.baseUrl, apiKey, model: ref.slice(slash + 1) });
}
