import { type ModelProvider, OfflineProvider, OpenAIProvider } from "@hub/agent";
import { type HubConfig, HubError } from "@hub/core";

/** A resolver from `provider/model` refs to providers, built once from config. */
export type ModelResolver = (ref: string) => { provider: ModelProvider; model: string };

/**
 * Builds the model resolver: `offline/<anything>` is the built-in offline
 * model; any other provider must be configured under `models.providers`.
 * Throws at start (not at the first message) when the agent's model is unknown.
 */
export function createModelResolver(config: HubConfig): ModelResolver {
  const providers = new Map<string, ModelProvider>();
  providers.set("offline", new OfflineProvider(config.agent.offlineTokenDelayMs));
  for (const [name, p] of Object.entries(config.models.providers)) {
    providers.set(
      name,
      new OpenAIProvider({
        id: name,
        ...(p.baseUrl ? { baseUrl: p.baseUrl } : {}),
        ...(p.apiKey ? { apiKey: p.apiKey } : {}),
      }),
    );
  }
  const resolve: ModelResolver = (ref) => {
    const slash = ref.indexOf("/");
    const name = ref.slice(0, slash);
    const provider = providers.get(name);
    if (!provider) {
      throw new HubError(
        "model_unknown",
        `The model "${ref}" names provider "${name}", which is not configured; add models.providers.${name} (baseUrl, apiKey) to hub.json5 or use "offline/echo".`,
      );
    }
    return { provider, model: ref.slice(slash + 1) };
  };
  resolve(config.agent.model);
  return resolve;
}
