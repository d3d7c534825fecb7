import { describe, expect, it } from "vitest";
import { slackTextToPlain } from "../src/normalize.js";
import { richTextToMrkdwn } from "../src/rich-text.js";

const richText = (...elements: unknown[]) => [{ type: "rich_text", block_id: "b1", elements }];
const section = (...elements: unknown[]) => ({ type: "rich_text_section", elements });
const plain = (blocks: unknown[]) => slackTextToPlain(richTextToMrkdwn(blocks), "UBOT0001");

describe("richTextToMrkdwn", () => {
  it("reads every inline element of a section the way Slack's text would say it", () => {
    const blocks = richText(
      section(
        { type: "user", user_id: "UBOT0001" },
        { type: "text", text: " ask " },
        { type: "user", user_id: "U0ANN0001" },
        { type: "text", text: " and " },
        { type: "usergroup", usergroup_id: "S0OPS0001" },
        { type: "text", text: " in " },
        { type: "channel", channel_id: "C0GEN0001" },
        { type: "text", text: ", " },
        { type: "broadcast", range: "here" },
        { type: "text", text: ": a & b <c> " },
        { type: "link", url: "https://e.com/x?a=1&b=2" },
        { type: "text", text: " " },
        { type: "link", url: "https://e.com", text: "the docs" },
        { type: "text", text: " " },
        { type: "emoji", name: "thumbsup", unicode: "1f44d" },
        { type: "emoji", name: "partyparrot" },
        { type: "text", text: " on " },
        { type: "date", timestamp: 1_700_000_000, format: "{date_short}", fallback: "Nov 14, 2023" },
        { type: "text", text: " in " },
        { type: "color", value: "#F405B3" },
        { type: "text", text: " for " },
        { type: "team", team_id: "T0TEAM001" },
      ),
    );
    expect(richTextToMrkdwn(blocks)).toBe(
      "<@UBOT0001> ask <@U0ANN0001> and <!subteam^S0OPS0001> in <#C0GEN0001>, <!here>: a &amp; b &lt;c&gt; " +
        "<https://e.com/x?a=1&amp;b=2> <https://e.com|the docs> 👍:partyparrot: on Nov 14, 2023 in #F405B3 for T0TEAM001",
    );
    expect(plain(blocks)).toBe(
      "ask @U0ANN0001 and @S0OPS0001 in #C0GEN0001, @here: a & b <c> https://e.com/x?a=1&b=2 " +
        "the docs (https://e.com) 👍:partyparrot: on Nov 14, 2023 in #F405B3 for T0TEAM001",
    );
  });

  it("puts lists, code blocks and quotes on their own lines", () => {
    const blocks = richText(
      section({ type: "text", text: "Steps:\n" }),
      {
        type: "rich_text_list",
        style: "ordered",
        indent: 0,
        elements: [section({ type: "text", text: "build" }), section({ type: "text", text: "ship" })],
      },
      {
        type: "rich_text_list",
        style: "bullet",
        indent: 1,
        elements: [section({ type: "text", text: "carefully" })],
      },
      { type: "rich_text_preformatted", elements: [{ type: "text", text: "npm run x > out" }] },
      { type: "rich_text_quote", elements: [{ type: "text", text: "said before\nand again" }] },
    );
    expect(plain(blocks)).toBe(
      "Steps:\n1. build\n2. ship\n  - carefully\n```\nnpm run x > out\n```\n> said before\n> and again",
    );
  });

  it("skips what it cannot read and what is not rich_text, never failing", () => {
    expect(richTextToMrkdwn(undefined)).toBe("");
    expect(
      richTextToMrkdwn([
        null,
        "text",
        { type: "section", text: { type: "mrkdwn", text: "a bot's section" } },
        { type: "rich_text", elements: [42, { type: "rich_text_section", elements: "x" }] },
        ...richText(section({ type: "text", text: 7 }, { type: "text", text: "kept" }, { type: "user" })),
      ]),
    ).toBe("kept");
  });
});
