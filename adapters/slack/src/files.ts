import { type FetchedMedia, type FetchMediaOptions, fetchMediaUrl, type Media } from "@hub/core";

/**
 * Downloads a file a user shared (`Media.ref` is its `url_private_download`)
 * with the bot token as Bearer (the app needs the `files:read` scope). The
 * token is sent only to Slack's own hosts (or the configured `apiUrl`'s, a
 * proxy or a test server), and a sign-in page instead of the file is an error.
 */
export async function fetchSlackFile(
  media: Media,
  options: FetchMediaOptions & { botToken: string; apiUrl: string },
): Promise<FetchedMedia> {
  const { botToken, apiUrl, ...limits } = options;
  const url = parseUrl(media.ref);
  if (!url) throw new Error(`Slack gave no download URL for file ${media.ref}`);
  const own = new URL(apiUrl).host;
  const slack = url.protocol === "https:" && /(^|\.)slack(-edge)?\.com$/.test(url.hostname);
  if (!slack && url.host !== own) throw new Error(`refusing to send the bot token to ${url.host}`);
  return fetchMediaUrl(url.href, {
    ...limits,
    platform: "Slack",
    headers: { authorization: `Bearer ${botToken}` },
    declaredSize: media.size,
    // Without the token (or the files:read scope) Slack answers with its sign-in page.
    ...(media.mime.startsWith("text/html") ? {} : { refuseMime: /^text\/html/ }),
  });
}

function parseUrl(ref: string): URL | undefined {
  try {
    const url = new URL(ref);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}
