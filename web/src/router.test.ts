import { describe, expect, it } from "vitest";
import { href, parseRoute } from "./router";

describe("routes", () => {
  it("round-trips a CRN with colons and slashes", () => {
    const crn = "crn:svc:aws:us-east-1:s3:bucket:123:logs/a b";
    const r = parseRoute(href("node", [crn], { tab: "edges" }));
    expect(r.view).toBe("node");
    expect(r.rest).toEqual([crn]);
    expect(r.query.get("tab")).toBe("edges");
  });

  it("defaults to the overview", () => {
    expect(parseRoute("").view).toBe("overview");
    expect(parseRoute("#/").view).toBe("overview");
  });

  it("leaves out empty query values", () => {
    expect(href("explorer", [], { provider: "aws", q: "" })).toBe("#/explorer?provider=aws");
  });

  it("keeps a malformed escape as it is", () => {
    expect(parseRoute("#/node/%E0%A4%A").rest).toEqual(["%E0%A4%A"]);
  });
});
