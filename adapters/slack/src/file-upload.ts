import { readFile } from "node:fs/promises";
import type { OutboundAttachment } from "@hub/core";
import type { WebClient } from "@slack/web-api";
import { z } from "zod";

const UploadUrlSchema = z.looseObject({ upload_url: z.string().url(), file_id: z.string().min(1) });
const CompletedSchema = z.looseObject({
  files: z
    .array(
      z.looseObject({
        id: z.string(),
        shares: z
          .looseObject({
            public: z.record(z.string(), z.array(z.looseObject({ ts: z.string() }))).optional(),
            private: z.record(z.string(), z.array(z.looseObject({ ts: z.string() }))).optional(),
          })
          .optional(),
      }),
    )
    .default([]),
});

/**
 * Steps 1 and 2 of Slack's external upload (what `files.uploadV2` does):
 * `files.getUploadURLExternal` with the name and length, then the bytes POSTed
 * to the returned URL. Returns the file id; nothing is visible in any
 * conversation until `files.completeUploadExternal` (so retrying these two
 * steps can never post twice; an uncompleted upload is discarded by Slack).
 */
export async function uploadFileBytes(client: WebClient, file: OutboundAttachment): Promise<string> {
  const bytes = await readFile(file.path);
  const answer = UploadUrlSchema.parse(
    await client.files.getUploadURLExternal({ filename: file.filename, length: bytes.byteLength }),
  );
  const res = await fetch(answer.upload_url, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(bytes),
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`Slack's upload URL answered HTTP ${res.status} for ${file.filename}`);
  return answer.file_id;
}

/**
 * Step 3: shares the uploaded file in the conversation (thread), with the
 * caption as its message text. Returns the ts of the message that carries it
 * when Slack already reports the share.
 */
export async function completeUpload(
  client: WebClient,
  r: { channel: string; threadTs?: string | undefined; caption: string; fileId: string; title: string },
): Promise<string | undefined> {
  const answer = CompletedSchema.parse(
    await client.files.completeUploadExternal({
      files: [{ id: r.fileId, title: r.title }],
      channel_id: r.channel,
      ...(r.threadTs ? { thread_ts: r.threadTs } : {}),
      ...(r.caption.trim() ? { initial_comment: r.caption } : {}),
    }),
  );
  const shares = answer.files.find((f) => f.id === r.fileId)?.shares;
  return (shares?.public?.[r.channel] ?? shares?.private?.[r.channel])?.[0]?.ts;
}
