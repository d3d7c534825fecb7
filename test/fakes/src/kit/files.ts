import type { ServerResponse } from "node:http";

/** One file a fake platform serves (an attachment a user sent). */
export interface HostedFile {
  bytes: Buffer;
  mime: string;
  /** Serve without Content-Length (chunked), as a CDN streaming a file of unknown size does. */
  chunked?: boolean;
}

/** How a test adds a file to a fake platform. */
export interface HostedFileInput {
  name: string;
  mime: string;
  bytes: Buffer | string;
  /** Serve it without Content-Length (the size is then known only while downloading). */
  chunked?: boolean;
}

/** Files a fake platform serves by path, with the headers a real CDN sends. */
export class FakeFileHost {
  readonly #files = new Map<string, HostedFile>();
  /** Paths requested, in order (a test can check a file was, or was not, downloaded). */
  readonly downloads: string[] = [];

  add(path: string, file: HostedFileInput): void {
    const bytes = typeof file.bytes === "string" ? Buffer.from(file.bytes, "utf8") : file.bytes;
    this.#files.set(path, { bytes, mime: file.mime, ...(file.chunked ? { chunked: true } : {}) });
  }

  has(path: string): boolean {
    return this.#files.has(path);
  }

  /** Answers a GET of `path`: the bytes in 64 KiB chunks, or 404. */
  serve(res: ServerResponse, path: string): void {
    this.downloads.push(path);
    const file = this.#files.get(path);
    if (!file) return void res.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
    res.writeHead(200, {
      "content-type": file.mime,
      ...(file.chunked ? {} : { "content-length": String(file.bytes.length) }),
    });
    for (let at = 0; at < file.bytes.length; at += 65_536) res.write(file.bytes.subarray(at, at + 65_536));
    res.end();
  }
}
