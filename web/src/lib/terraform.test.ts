import { describe, expect, it } from "vitest";
import { attributeLine, cutNote, totalFigures } from "./terraform";

describe("terraform view", () => {
  it("shows the totals in a fixed order", () => {
    const t = { attributes: 3, changed: 2, declared: 10, gone: 1, in_sync: 7, mapped: 10, outside_scans: 4, unmanaged: 50, unmapped: 2 };
    expect(totalFigures(t).map((f) => [f.key, f.value])).toEqual([
      ["declared", 10],
      ["in_sync", 7],
      ["changed", 2],
      ["gone", 1],
      ["unmanaged", 50],
      ["outside_scans", 4],
      ["unmapped", 2],
    ]);
  });

  it("writes an attribute's drift with absent sides named", () => {
    expect(attributeLine({ attribute: "size", property: "size_gib", declared: 100, live: 200 })).toBe("size: 100 → 200");
    expect(attributeLine({ attribute: "tags.team", property: "tags.team", declared: null, live: "ml" })).toBe("tags.team: (none) → ml");
    expect(attributeLine({ attribute: "tags", property: "tags", declared: { a: 1 }, live: null })).toBe('tags: {"a":1} → (none)');
  });

  it("says when a list is cut", () => {
    expect(cutNote(100, 100)).toBe("");
    expect(cutNote(100, 2500)).toBe("the 100 first of 2,500");
  });
});
