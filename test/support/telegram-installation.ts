import {
  type FakeOpenAI,
  type FakeTelegram,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "./hub-process.js";
import { type Installation, installation } from "./installation.js";
import { fakeTelegramChannel } from "./telegram-channel.js";

/** A fake model, a fake Bot API and a hub installation talking to both (one Telegram user allowed). */
export interface TelegramInstallation {
  model: FakeOpenAI;
  telegram: FakeTelegram;
  inst: Installation;
  /** Stops the installation's processes and both fakes. */
  close(): Promise<void>;
}

/**
 * Starts the fakes and makes an installation whose Telegram channel polls the fake for `user`'s
 * messages (`channel`: more of `channels.telegram`; `env`: more of every process's environment).
 */
export async function telegramInstallation(
  name: string,
  user: number,
  options: { channel?: Record<string, unknown>; env?: Record<string, string> } = {},
): Promise<TelegramInstallation> {
  const [model, telegram] = await Promise.all([startFakeOpenAI(), startFakeTelegram()]);
  const inst = installation(name, {
    config: { channels: { telegram: fakeTelegramChannel(telegram, [user], options.channel) } },
    env: { ...fakeModelEnv(model), ...options.env },
  });
  return {
    model,
    telegram,
    inst,
    close: async () => {
      await inst.dispose();
      await Promise.all([model.close(), telegram.close()]);
    },
  };
}
