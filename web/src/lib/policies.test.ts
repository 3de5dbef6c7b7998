import { describe, expect, it } from "vitest";
import { fieldOf, markPosition, moveItem, parsePack, validPrefix } from "./policies";

// The pack files the repository ships, read as they are (vitest runs in web/).
async function packFile(path: string): Promise<string> {
  const fs = (await import(/* @vite-ignore */ "node:" + "fs")) as { readFileSync(p: string, enc: string): string };
  return fs.readFileSync(`../policies/${path}`, "utf8");
}

describe("moveItem", () => {
  it("moves up, down and to the ends", () => {
    expect(moveItem(["a", "b", "c"], 1, 0)).toEqual(["b", "a", "c"]);
    expect(moveItem(["a", "b", "c"], 0, 2)).toEqual(["b", "c", "a"]);
    expect(moveItem(["a", "b", "c"], 2, 1)).toEqual(["a", "c", "b"]);
  });

  it("leaves the order alone for a move off the ends", () => {
    expect(moveItem(["a", "b"], 0, -1)).toEqual(["a", "b"]);
    expect(moveItem(["a", "b"], 1, 2)).toEqual(["a", "b"]);
  });
});

describe("markPosition", () => {
  it("points at the character of a 1-based line and column", () => {
    expect(markPosition('kind == "volume" &&\n (provider = "aws"', 2, 12)).toEqual({
      before: 'kind == "volume" &&\n (provider ',
      at: "=",
      after: ' "aws"',
    });
  });

  it("points past the end when the condition stops short", () => {
    expect(markPosition("cost >", 1, 7)).toEqual({ before: "cost >", at: "", after: "" });
  });

  it("counts characters, not UTF-16 units", () => {
    expect(markPosition('tags.x == "é€" && y', 1, 16)).toEqual({ before: 'tags.x == "é€" ', at: "&", after: "& y" });
  });

  it("refuses positions that are not in the text", () => {
    expect(markPosition("a", 0, 1)).toBeNull();
    expect(markPosition("a", 2, 1)).toBeNull();
  });
});

describe("fieldOf", () => {
  it("places the API's refusals at their field", () => {
    expect(fieldOf(422, 'rule "ok": invalid condition: Syntax error at line 1, column 7', { line: 1, column: 7 })).toBe("condition");
    expect(fieldOf(422, 'rule "bad id": rule id "bad id" has the character \' \'', { index: 0 })).toBe("id");
    expect(fieldOf(422, 'rule "ok": unknown action "zap"; expected block, flag or warn', {})).toBe("action");
    expect(fieldOf(422, 'rule "ok": unknown mode "x"; expected enforcing or shadow', {})).toBe("mode");
    expect(fieldOf(409, "rule ok already exists", {})).toBe("id");
    expect(fieldOf(422, "rules is empty", {})).toBe("form");
  });
});

describe("parsePack", () => {
  it("reads the rules of the cost-hygiene pack, folded conditions included", async () => {
    const p = parsePack(await packFile("cost-hygiene/storage.yaml"));
    expect(p.problems).toEqual([]);
    expect(p.rules).toEqual([
      {
        id: "detached-volumes",
        condition:
          'kind == "volume" && has(props.attachment_state) && props.attachment_state == "detached" && out["AttachedTo"] == 0',
        action: "flag",
        message: "a block volume attached to nothing is paid for and unused",
      },
      {
        id: "gp2-volumes",
        condition: 'kind == "volume" && has(props.volume_type) && props.volume_type == "gp2"',
        action: "warn",
        message: "gp3 gives the same baseline for about 20% less",
      },
    ]);
  });

  it("reads modes and quoted conditions", async () => {
    const compute = parsePack(await packFile("cost-hygiene/compute.yaml"));
    expect(compute.problems).toEqual([]);
    expect(compute.rules.map((r) => [r.id, r.mode ?? "enforcing"])).toEqual([
      ["long-stopped-instances", "enforcing"],
      ["costly-unreachable", "shadow"],
    ]);
    const tags = parsePack(await packFile("tagging-hygiene/tags.yaml"));
    expect(tags.problems).toEqual([]);
    expect(tags.rules[0]?.condition).toBe("!has(tags.owner)");
    expect(tags.rules[2]?.condition).toBe('has(tags.env) && tags.env == "prod" && !has(tags.owner)');
  });

  it("keeps the pack's name from a manifest pasted with the rules", async () => {
    const text = (await packFile("tagging-hygiene/manifest.yaml")) + "\n" + (await packFile("tagging-hygiene/tags.yaml"));
    const p = parsePack(text);
    expect(p.name).toBe("tagging-hygiene");
    expect(p.rules).toHaveLength(3);
  });

  it("reads the README's example with comments and a literal block", () => {
    const p = parsePack(
      [
        "# a pack",
        "rules:",
        "  - id: gp2-volumes",
        "    condition: |-",
        '      kind == "volume"',
        '      && props.volume_type == "gp2"',
        "    action: warn            # block, flag or warn",
        "    message: 'it''s cheaper'",
        "    mode: shadow            # optional",
        "  -",
        "    id: second",
        '    condition: "cost > 1.0"',
        "    action: block",
      ].join("\n"),
    );
    expect(p.problems).toEqual([]);
    expect(p.rules).toEqual([
      { id: "gp2-volumes", condition: 'kind == "volume"\n&& props.volume_type == "gp2"', action: "warn", message: "it's cheaper", mode: "shadow" },
      { id: "second", condition: "cost > 1.0", action: "block", message: "" },
    ]);
  });

  it("reads JSON, as an object or a bare list", () => {
    const rule = { id: "r", condition: "cost > 1.0", action: "warn", message: "m" };
    expect(parsePack(JSON.stringify({ rules: [rule] })).rules).toEqual([rule]);
    expect(parsePack(JSON.stringify([rule])).rules).toEqual([rule]);
    expect(parsePack("{ nope").problems[0]).toMatch(/^not valid JSON/);
  });

  it("says what is wrong instead of guessing", () => {
    expect(parsePack("name: x\n").problems).toEqual(["no rules: a pack's rule file holds a list under rules:"]);
    const p = parsePack("rules:\n  - id: a\n    action: warn\n  - id: b\n    condition: x\n    severity: 3\n");
    expect(p.rules.map((r) => r.id)).toEqual(["b"]);
    expect(p.problems).toEqual(["rule 1: needs an id and a condition", "rule 2 (b): unknown key severity"]);
  });
});

describe("validPrefix", () => {
  it("takes what a rule id may hold", () => {
    expect(validPrefix("cost-hygiene.")).toBe(true);
    expect(validPrefix("")).toBe(true);
    expect(validPrefix("cost hygiene/")).toBe(false);
  });
});
