import { describe, expect, it } from "vitest";
import { AuthFailureLimiter } from "../src/auth-limiter.js";

describe("failed logins per address", () => {
  it("an IPv4 address is refused after 5 failures; its neighbour is not", () => {
    const limiter = new AuthFailureLimiter();
    for (let i = 0; i < 5; i++) limiter.fail("203.0.113.7");
    expect(limiter.blocked("203.0.113.7")).toBe(true);
    expect(limiter.blocked("::ffff:203.0.113.7")).toBe(true);
    expect(limiter.blocked("203.0.113.8")).toBe(false);
  });

  it("an IPv6 client is one /64 network: a new address of the same network per guess counts as the same client", () => {
    const limiter = new AuthFailureLimiter();
    // One host holds all 2^64 addresses of its network; counting each alone would allow unlimited guesses.
    for (let i = 1; i <= 5; i++) limiter.fail(`2001:db8:1:2::${i.toString(16)}`);
    expect(limiter.blocked("2001:db8:1:2:ffff:1:2:3")).toBe(true);
    expect(limiter.blocked("2001:0db8:0001:0002::abcd")).toBe(true);
    expect(limiter.blocked("2001:db8:1:3::1")).toBe(false);
    expect(limiter.blocked("::1")).toBe(false);
  });
});
