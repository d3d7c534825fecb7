import { type ChannelAdapter, ChannelRefusedError, type HubError, PermanentSendError } from "@hub/core";

/**
 * The stand-in for a channel account its plugin could not build (no bot token, say): it starts `failed`
 * with the plugin's sentence, as a refused token does, so the gateway, the web chat and the other
 * channels run while the operator fixes the key the sentence names.
 */
export function unbuiltAdapter(channel: string, accountId: string, error: HubError): ChannelAdapter {
  const adapter: ChannelAdapter = {
    channel,
    accountId,
    capabilities: { textLimit: 4096, markdown: "plain", threads: false, typing: false, edit: false },
    start: async () => {
      throw new ChannelRefusedError(error.code, error.message, { cause: error });
    },
    stop: async () => {},
    send: async () => {
      throw new PermanentSendError(`${channel} is not running: ${error.message}`);
    },
    sendTyping: async () => {},
  };
  unbuilt.add(adapter);
  return adapter;
}

const unbuilt = new WeakSet<ChannelAdapter>();

/** Whether `adapter` is a stand-in: its capabilities are placeholders, not its channel's. */
export function isUnbuilt(adapter: ChannelAdapter): boolean {
  return unbuilt.has(adapter);
}
