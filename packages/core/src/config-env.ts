/** One environment variable that set a config key, so an error about that key can name the variable. */
export interface EnvSetting {
  /** The variable, e.g. `HUB_GATEWAY_PORT`. */
  variable: string;
  /** Its value as the environment gave it. */
  value: string;
  /** The config key it set, e.g. `["gateway", "port"]`. */
  path: string[];
  /** Whether its value may be printed (never for tokens, passwords, keys or URLs that may carry them). */
  shown: boolean;
}

type Json = { [key: string]: unknown };

/** Environment variables that override config keys: name, key, value parser, and whether the value may be printed. */
const ENV_OVERRIDES: Array<[string, string[], (v: string) => unknown, boolean]> = [
  ["HUB_GATEWAY_HOST", ["gateway", "host"], String, true],
  ["HUB_GATEWAY_PORT", ["gateway", "port"], Number, true],
  ["HUB_GATEWAY_TOKEN", ["gateway", "token"], String, false],
  ["HUB_GATEWAY_PASSWORD", ["gateway", "password"], String, false],
  ["HUB_HEALTH_HOST", ["health", "host"], String, true],
  ["HUB_HEALTH_PORT", ["health", "port"], Number, true],
  ["HUB_MODEL", ["agent", "model"], String, true],
  ["REDIS_URL", ["redis", "url"], String, false],
  ["HUB_REDIS_PREFIX", ["redis", "prefix"], String, true],
  ["HUB_SESSIONS_STORE", ["sessions", "store"], String, true],
  ["OPENAI_BASE_URL", ["models", "providers", "openai", "baseUrl"], String, false],
  ["OPENAI_API_KEY", ["models", "providers", "openai", "apiKey"], String, false],
  ["HUB_ROLES", ["roles"], (v) => v.split(",").map((r) => r.trim()), true],
  ["HUB_LANE_LEASE_MS", ["agent", "laneLeaseMs"], Number, true],
  ["HUB_AGENT_THREADS", ["agent", "threads"], Number, true],
];

function setPath(target: Json, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Json;
  }
  node[path[path.length - 1] as string] = value;
}

/**
 * Whether `OPENAI_API_KEY` may be the `openai` provider's key: it is OpenAI's, so only for OpenAI's server
 * (no `baseUrl`, or one on api.openai.com), or a `baseUrl` the environment pairs it with (`OPENAI_BASE_URL`,
 * as OpenAI's own SDK takes them). A provider named `openai` pointed at OpenRouter or a local server in the
 * file never gets it.
 */
function openAiKeyFits(merged: Json, env: NodeJS.ProcessEnv): boolean {
  if (env.OPENAI_BASE_URL) return true;
  const providers = (merged.models as Json | undefined)?.providers as Json | undefined;
  const baseUrl = (providers?.openai as Json | undefined)?.baseUrl;
  if (typeof baseUrl !== "string") return true;
  try {
    return new URL(baseUrl).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

/** Sets every config key an environment variable overrides (a set, non-empty variable wins over the file). */
export function applyEnvOverrides(merged: Json, env: NodeJS.ProcessEnv): EnvSetting[] {
  const applied: EnvSetting[] = [];
  for (const [variable, path, parse, shown] of ENV_OVERRIDES) {
    const value = env[variable];
    if (value === undefined || value === "") continue;
    if (variable === "OPENAI_API_KEY" && !openAiKeyFits(merged, env)) continue;
    setPath(merged, path, parse(value));
    applied.push({ variable, value, path, shown });
  }
  return applied;
}

/** The setting whose key is `path` or holds it (the longest such key), if an environment variable set it. */
export function envSettingAt(
  settings: ReadonlyArray<EnvSetting>,
  path: ReadonlyArray<PropertyKey>,
): EnvSetting | undefined {
  const holds = (s: EnvSetting) => s.path.length <= path.length && s.path.every((k, i) => k === path[i]);
  return settings.filter(holds).sort((a, b) => b.path.length - a.path.length)[0];
}
