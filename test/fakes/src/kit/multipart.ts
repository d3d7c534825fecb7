/** One part of a multipart/form-data body: a field, or a file with its bytes. */
export interface MultipartPart {
  name: string;
  filename?: string | undefined;
  contentType?: string | undefined;
  data: Buffer;
}

/** The boundary of a `multipart/form-data` content type, as sent (case kept). */
export function boundaryOf(contentType: string): string | undefined {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** A `name=value` parameter of a header, quoted or not (grammY writes `filename=x` unquoted). */
function headerParam(header: string, param: string): string | undefined {
  const match = new RegExp(`(?:^|;)\\s*${param}=(?:"([^"]*)"|([^;\\r\\n]*))`, "i").exec(header);
  const value = match?.[1] ?? match?.[2];
  return value === undefined ? undefined : value.trim();
}

/**
 * Parses a `multipart/form-data` body the tolerant way platforms do: headers
 * with or without a space after the colon, quoted or bare parameters. The
 * fakes use it for file uploads (Telegram sendPhoto/sendDocument, Discord
 * `files[n]`), so a test can check the exact bytes that arrived.
 */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    // Each part: CRLF, headers, CRLF CRLF, data, CRLF before the next delimiter.
    const chunk = body.subarray(start + 2, next - 2);
    const split = chunk.indexOf("\r\n\r\n");
    if (split !== -1) {
      const headers = chunk.subarray(0, split).toString("utf8").split("\r\n");
      const disposition = headers.find((h) => /^content-disposition\s*:/i.test(h)) ?? "";
      const type = headers.find((h) => /^content-type\s*:/i.test(h));
      parts.push({
        name: headerParam(disposition.replace(/^[^:]*:/, ""), "name") ?? "",
        filename: headerParam(disposition.replace(/^[^:]*:/, ""), "filename"),
        contentType: type?.replace(/^[^:]*:/, "").trim(),
        data: Buffer.from(chunk.subarray(split + 4)),
      });
    }
    at = next;
  }
  return parts;
}
