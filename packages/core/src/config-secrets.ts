/**
 * Config keys whose string values (or arrays of strings) are secrets, in any
 * section: channel tokens and signing secrets, model API keys, gateway tokens
 * (the owner's and every client's) and passwords. Channel plugins add their
 * own through `ChannelPlugin.secretKeys`.
 */
export const SECRET_CONFIG_KEYS: readonly string[] = [
  "token",
  "botToken",
  "apiKey",
  "apiKeys",
  "signingSecret",
  "appToken",
  "webhookSecret",
  "password",
  "secret",
  "clientSecret",
];

// Keys not in the list that still look like secrets (e.g. a new channel's `userToken`).
const SECRET_LOOKING_KEY = /(token|secret|password|apikeys?)$/i;

/**
 * Every secret in a validated config: the value of every secret-looking key at
 * any depth (the listed keys, `extraKeys`, and keys ending in token, secret,
 * password or apiKey), and the password inside any URL (`redis://:pw@host`).
 */
export function collectConfigSecrets(config: unknown, extraKeys: Iterable<string> = []): string[] {
  const keys = new Set([...SECRET_CONFIG_KEYS, ...extraKeys].map((k) => k.toLowerCase()));
  const found = new Set<string>();
  const visit = (value: unknown, secretKey: boolean): void => {
    if (typeof value === "string") {
      if (secretKey) found.add(value);
      const password = urlPassword(value);
      if (password) found.add(password);
    } else if (Array.isArray(value)) {
      for (const item of value) visit(item, secretKey);
    } else if (typeof value === "object" && value !== null) {
      for (const [key, child] of Object.entries(value))
        visit(child, keys.has(key.toLowerCase()) || SECRET_LOOKING_KEY.test(key));
    }
  };
  visit(config, false);
  return [...found];
}

function urlPassword(value: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(value)) return undefined;
  try {
    const password = new URL(value).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}
