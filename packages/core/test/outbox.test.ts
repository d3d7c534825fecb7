import { mkdtempSync, rmSync, utimesSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { attachmentKindOf, mimeOfFilename, Outbox, safeFilename } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "hub-outbox-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("outbox", () => {
  it("stores bytes under a reference and gives them back by path", async () => {
    const outbox = new Outbox(join(dir, "a"));
    const file = await outbox.put(Buffer.from([0x89, 0x50, 0x4e, 0x47]), "chart.png");
    expect(file).toMatchObject({ filename: "chart.png", mime: "image/png", kind: "image", size: 4 });
    expect([...(await readFile(outbox.pathOf(file.ref)))]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it("a reference can name nothing outside the outbox", () => {
    const outbox = new Outbox(join(dir, "b"));
    for (const ref of ["../secret", "/etc/passwd", "a/b", "..", ""])
      expect(() => outbox.pathOf(ref)).toThrow();
  });

  it("sweeps files older than the retention and keeps newer ones", async () => {
    const outbox = new Outbox(join(dir, "c"), 60_000);
    const old = await outbox.put(Buffer.from("old"), "old.txt");
    const fresh = await outbox.put(Buffer.from("new"), "new.txt");
    const past = new Date(Date.now() - 120_000);
    utimesSync(outbox.pathOf(old.ref), past, past);
    expect(await outbox.sweep()).toBe(1);
    await expect(readFile(outbox.pathOf(old.ref))).rejects.toThrow();
    expect(await readFile(outbox.pathOf(fresh.ref), "utf8")).toBe("new");
    expect(await new Outbox(join(dir, "missing")).sweep()).toBe(0);
  });

  it("names files safely and types them by extension", () => {
    expect(safeFilename("../../etc/passwd")).toBe("passwd");
    expect(safeFilename("a\u0000b<c>.txt")).toBe("a_b_c_.txt");
    expect(safeFilename("..")).toBe("file");
    expect(safeFilename(`${"x".repeat(300)}.csv`)).toHaveLength(120);
    // C1 controls (NEL, CSI), direction overrides and line separators: nothing hides what the name is.
    expect(safeFilename("a\u0085b\u2028c\u009bd.txt")).toBe("a_bc_d.txt");
    expect(safeFilename("report\u202Egpj.exe")).toBe("reportgpj.exe");
    // Cut by characters: no half emoji at the cut.
    expect(Array.from(safeFilename(`${"😀".repeat(200)}.txt`))).toHaveLength(120);
    expect(mimeOfFilename("Report.PDF")).toBe("application/pdf");
    expect(mimeOfFilename("blob")).toBe("application/octet-stream");
    expect(attachmentKindOf("image/svg+xml")).toBe("file");
    expect(attachmentKindOf("image/jpeg")).toBe("image");
  });
});
