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
 * password or apiKey), and the password inside any URL (`redis://:pw@host`, each
 * of a comma-separated list, and also a URL that cannot be parsed).
 */
export function collectConfigSecrets(config: unknown, extraKeys: Iterable<string> = []): string[] {
  const keys = new Set([...SECRET_CONFIG_KEYS, ...extraKeys].map((k) => k.toLowerCase()));
  const found = new Set<string>();
  const visit = (value: unknown, secretKey: boolean): void => {
    if (typeof value === "string") {
      if (secretKey) found.add(value);
      for (const password of urlPasswords(value)) found.add(password);
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

// The password of a URL that `new URL` reads; the raw and the decoded form (both may reach a line).
function parsedPassword(url: string): string[] | undefined {
  try {
    const parsed = new URL(url);
    // ioredis also takes a password from the query string.
    const passwords = [parsed.password, parsed.searchParams.get("password") ?? ""].filter((p) => p !== "");
    return passwords.flatMap((password) => [password, safeDecode(password)]);
  } catch {
    return undefined;
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// A URL `new URL` cannot read (a bad port or host): everything between "://" and the last "@" is
// taken as user and password, and all of it after the first ":" (all of it without one) is kept.
function writtenPassword(url: string): string[] {
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/is.exec(url)?.[1];
  if (!userinfo) return [];
  const colon = userinfo.indexOf(":");
  const password = colon === -1 ? userinfo : userinfo.slice(colon + 1);
  return password ? [password, safeDecode(password)] : [];
}

/**
 * The passwords inside `value` when it is a URL with credentials
 * (`redis://:pw@host`, or `?password=pw` as ioredis also reads), or a comma-separated list of them (a Redis Cluster's
 * seeds), whether or not each URL is valid.
 */
export function urlPasswords(value: string): string[] {
  if (!/^[a-z][a-z0-9+.-]*:\/\/.*(@|[?&]password=)/is.test(value)) return [];
  // The whole value too: a "," may be part of one URL's password.
  const urls = value.includes(",") ? [value, ...value.split(",").map((url) => url.trim())] : [value];
  return [...new Set(urls.flatMap((url) => parsedPassword(url) ?? writtenPassword(url)))];
}
