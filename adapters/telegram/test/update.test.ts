import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseUpdate, updateIdOf } from "../src/update.js";

// What the Bot API's update_id must be for the adapter to use it, as zod states it.
const UpdateIdSchema = z.looseObject({
  update_id: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});

describe("updateIdOf", () => {
  it.each([
    ["an update", { update_id: 7, message: {} }],
    ["update_id 0", { update_id: 0 }],
    ["the largest safe integer", { update_id: Number.MAX_SAFE_INTEGER }],
    ["past the safe integers", { update_id: 2 ** 53 }],
    ["a negative id", { update_id: -1 }],
    ["a fraction", { update_id: 1.5 }],
    ["NaN", { update_id: Number.NaN }],
    ["Infinity", { update_id: Number.POSITIVE_INFINITY }],
    ["a string id", { update_id: "7" }],
    ["a null id", { update_id: null }],
    ["no id", {}],
    ["an array", Object.assign([1], { update_id: 3 })],
    ["null", null],
    ["a number", 7],
    ["a string", "update"],
    ["an object without a prototype", Object.assign(Object.create(null), { update_id: 4 })],
  ])("reads %s exactly as the zod schema does", (_, raw) => {
    const parsed = UpdateIdSchema.safeParse(raw);
    expect(updateIdOf(raw)).toBe(parsed.success ? parsed.data.update_id : undefined);
  });
});

describe("parseUpdate", () => {
  const message = {
    message_id: 3,
    date: 1_700_000_000,
    chat: { id: 42, type: "private" },
    from: { id: 42, is_bot: false, first_name: "Ann" },
    text: "hi",
  };

  it("reads a message whose ids and dates are the Bot API's Integers", () => {
    expect(parseUpdate({ update_id: 1, message })).toMatchObject({ ok: true, kind: "message" });
  });

  it.each([
    ["message_id", { ...message, message_id: 1.5 }],
    ["chat.id", { ...message, chat: { id: 42.5, type: "private" } }],
    ["from.id", { ...message, from: { id: 0.1, is_bot: false, first_name: "Ann" } }],
    ["date", { ...message, date: 1_700_000_000.5 }],
  ])("drops a message whose %s is not an integer, saying which field", (field, forged) => {
    const parsed = parseUpdate({ update_id: 2, message: forged });
    expect(parsed).toMatchObject({ ok: false, updateId: 2 });
    const reason = parsed.ok ? "" : parsed.reason;
    expect(reason).toMatch(/does not match the Bot API's Message/);
    expect(reason).toContain(field);
  });
});
