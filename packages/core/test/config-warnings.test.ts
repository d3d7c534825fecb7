import { describe, expect, it } from "vitest";
import { configWarnings, parseConfig } from "../src/index.js";

const parse = (raw: unknown) => parseConfig(raw, "hub.json5", {});

describe("configWarnings", () => {
  it('says that dmPolicy "open" without "*" in allowFrom answers no direct message, per account', () => {
    const config = parse({
      channels: {
        telegram: { dmPolicy: "open", allowFrom: ["123"] },
        slack: { dmPolicy: "open", accounts: { acme: {}, everyone: { allowFrom: ["*"] } } },
      },
    });
    expect(configWarnings(config)).toEqual([
      'channels.telegram.dmPolicy is "open" but channels.telegram.allowFrom has no "*", so no direct message is answered; add "*" to allowFrom to answer everyone, or set dmPolicy to "allowlist" to answer only the senders listed.',
      'channels.slack.accounts.acme.dmPolicy is "open" but channels.slack.accounts.acme.allowFrom has no "*", so no direct message is answered; add "*" to allowFrom to answer everyone, or set dmPolicy to "allowlist" to answer only the senders listed.',
    ]);
  });

  it("has nothing to say of the defaults, an open channel with '*', or a disabled account", () => {
    expect(configWarnings(parse({}))).toEqual([]);
    expect(configWarnings(parse({ channels: { telegram: { dmPolicy: "open", allowFrom: ["*"] } } }))).toEqual(
      [],
    );
    expect(configWarnings(parse({ channels: { telegram: { dmPolicy: "open", enabled: false } } }))).toEqual(
      [],
    );
  });
});
