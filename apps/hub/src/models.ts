import {
  type AuthProfile,
  anthropicProvider,
  type FailoverDecision,
  FailoverProvider,
  type ModelCandidate,
  type ModelInputs,
  type ModelProvider,
  OfflineProvider,
  openAIProvider,
} from "@hub/agent";

import { type HubConfig, HubError, type HubLogger } from "@hub/core";

/** A resolver from model refs (or aliases) to a provider and model name. */
export type ModelResolver = (ref: string) => { provider: ModelProvider; model: string };

type ProviderConfig = HubConfig["models"]["providers"][string];

/** The largest image each API takes: Anthropic 5 MB of base64 (3.75 MB of bytes), OpenAI 20 MB. */
const MAX_IMAGE_BYTES = { anthropic: (5 * 1024 * 1024 * 3) / 4, openai: 20 * 1024 * 1024 } as const;

/** Whether a provider's model takes images (`vision`; unset: Anthropic and OpenAI's own API do). */
function takesImages(p: ProviderConfig, model: string): boolean {
  if (Array.isArray(p.vision)) return p.vision.includes(model);
  if (p.vision !== undefined) return p.vision;
  return p.api === "anthropic" || p.baseUrl === undefined;
}

/** What a model ref takes besides text (the offline model: nothing). */
export function modelInputsOf(config: HubConfig, input: string): ModelInputs {
  const ref = config.models.aliases[input] ?? input;
  const slash = ref.indexOf("/");
  const p = config.models.providers[ref.slice(0, slash)];
  if (!p || slash <= 0 || !takesImages(p, ref.slice(slash + 1))) return {};
  return { images: { maxBytes: MAX_IMAGE_BYTES[p.api] } };
}

function profilesOf(name: string, p: ProviderConfig): AuthProfile[] {
  const keys = [...(p.apiKey ? [p.apiKey] : []), ...p.apiKeys];
  const make = (apiKey: string | undefined, i: number): AuthProfile => {
    const options = { id: name, ...(p.baseUrl ? { baseUrl: p.baseUrl } : {}), ...(apiKey ? { apiKey } : {}) };
    return {
      id: `${name}#${i + 1}`,
      provider:
        p.api === "anthropic"
          ? anthropicProvider({ ...options, promptCache: p.promptCache })
          : openAIProvider(options),
    };
  };
  // A keyless provider (a local Ollama, say) is one profile without a key.
  return keys.length ? keys.map((k, i) => make(k, i)) : [make(undefined, 0)];
}

/**
 * Builds the model resolver from config: `offline/<anything>` is the built-in
 * offline model; other refs name a configured provider (or an alias). The
 * agent's model resolves to a failover provider over its candidate chain
 * (`agent.model`, then `agent.fallbacks`), each with the provider's auth
 * profiles. Unknown providers or aliases fail at start, not at the first message.
 */
export function createModelResolver(
  config: HubConfig,
  logger: HubLogger,
  onDecision: (decision: FailoverDecision) => void = () => {},
): ModelResolver {
  const profiles = new Map<string, AuthProfile[]>([
    ["offline", [{ id: "offline", provider: new OfflineProvider(config.agent.offlineTokenDelayMs) }]],
  ]);
  for (const [name, p] of Object.entries(config.models.providers)) profiles.set(name, profilesOf(name, p));

  const candidate = (input: string): ModelCandidate => {
    const ref = config.models.aliases[input] ?? input;
    const slash = ref.indexOf("/");
    const name = slash > 0 ? ref.slice(0, slash) : "";
    const found = profiles.get(name);
    if (slash <= 0 || !found) {
      throw new HubError(
        "model_unknown",
        `The model "${input}" is not usable: ${slash <= 0 ? "it is neither provider/model nor an alias in models.aliases" : `provider "${name}" is not configured; add models.providers.${name} (api, baseUrl, apiKey) to hub.json5`}, or use "offline/echo".`,
      );
    }
    const model = ref.slice(slash + 1);
    const provider = config.models.providers[name];
    return { ref, model, profiles: found, images: provider ? takesImages(provider, model) : false };
  };

  const chain = [config.agent.model, ...config.agent.fallbacks].map(candidate);
  const agentProvider = new FailoverProvider(chain, logger, onDecision);
  return (ref) => {
    if (ref === config.agent.model) return { provider: agentProvider, model: chain[0]!.model };
    const c = candidate(ref);
    return { provider: new FailoverProvider([c], logger, onDecision), model: c.model };
  };
}
