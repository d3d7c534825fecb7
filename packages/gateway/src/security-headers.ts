/**
 * Headers on every answer of the gateway's HTTP server (pages, files, probes, metrics, the control API). The web chat signs
 * in from local storage, so no other site may frame it (clickjacking), sniff
 * a file into another type, or see its URL (which can carry `#token=`) as a referrer.
 * Scripts, styles and connections come only from the gateway itself.
 */
export function securityHeaders(host: string | undefined): Record<string, string> {
  const sockets = host && /^[\w.[\]:-]+$/.test(host) ? ` ws://${host} wss://${host}` : "";
  return {
    "content-security-policy": [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      `connect-src 'self'${sockets}`,
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join("; "),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
}
