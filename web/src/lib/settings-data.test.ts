import { describe, expect, it } from "vitest";
import { configPatch, createdText, deepEqual, parseConfig, patchKeys, tokenNameProblem } from "./settings-data";

describe("configPatch", () => {
  const before = {
    daemon: { scan_interval: "1h", listen: "127.0.0.1:7070" },
    heuristics: { idle_days: 14, rules: ["a", "b"] },
    oracle: { enabled: true },
  };

  it("is empty when nothing changed", () => {
    expect(configPatch(before, structuredClone(before))).toEqual({});
  });
  it("sends only the changed keys of nested objects", () => {
    const after = structuredClone(before);
    after.daemon.scan_interval = "30m";
    expect(configPatch(before, after)).toEqual({ daemon: { scan_interval: "30m" } });
  });
  it("replaces arrays whole", () => {
    const after = structuredClone(before);
    after.heuristics.rules = ["a"];
    expect(configPatch(before, after)).toEqual({ heuristics: { rules: ["a"] } });
  });
  it("removes a deleted key with null, nested or whole", () => {
    const after: Record<string, unknown> = structuredClone(before);
    delete (after.daemon as Record<string, unknown>).listen;
    delete after.oracle;
    expect(configPatch(before, after as never)).toEqual({ daemon: { listen: null }, oracle: null });
  });
  it("adds new keys and replaces an object by a scalar", () => {
    expect(configPatch(before, { ...before, sau: { audit_bucket: "file:///x" }, oracle: false as never })).toEqual({
      sau: { audit_bucket: "file:///x" },
      oracle: false,
    });
  });
});

describe("patchKeys", () => {
  it("names the keys a patch touches, dotted", () => {
    expect(patchKeys({ daemon: { scan_interval: "30m", listen: null }, oracle: false, sau: {} })).toEqual([
      { key: "daemon.scan_interval", value: "30m" },
      { key: "daemon.listen", value: null },
      { key: "oracle", value: false },
      { key: "sau", value: {} },
    ]);
  });
});

describe("parseConfig", () => {
  it("accepts a JSON object only", () => {
    expect(parseConfig('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    const bad = parseConfig("{a: 1}");
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/^not valid JSON/);
    expect(parseConfig("[1]")).toEqual({ ok: false, error: "the configuration must be a JSON object ({ ... })" });
    expect(parseConfig("null").ok).toBe(false);
  });
});

describe("deepEqual", () => {
  it("compares values, arrays and objects structurally", () => {
    expect(deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(deepEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual(null, {})).toBe(false);
  });
});

describe("tokens", () => {
  it("shows the creation time as RFC 3339", () => {
    expect(createdText(0)).toBe("1970-01-01T00:00:00Z");
    expect(createdText("2026-01-01T00:00:00Z")).toBe("2026-01-01T00:00:00Z");
    expect(createdText(undefined)).toBe("–");
  });
  it("needs a name", () => {
    expect(tokenNameProblem("  ")).toBe("a name is needed");
    expect(tokenNameProblem("ci-bot")).toBeNull();
  });
});
