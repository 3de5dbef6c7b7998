import { describe, expect, it } from "vitest";
import { withQuery } from "../api/client";
import { href, parseRoute } from "../router";
import {
  csvName,
  filtersFromQuery,
  filtersToQuery,
  FIRST_PAGE,
  isFiltered,
  nextPage,
  NO_FILTERS,
  nodesQuery,
  previousPage,
  rowRange,
  sameFilters,
} from "./explorer";

describe("explorer filters", () => {
  it("reads the filters of a link from another view", () => {
    const r = parseRoute("#/explorer?provider=aws&type=ec2:volume&waste=true&tag=env=prod&q=vol-0");
    expect(r.view).toBe("explorer");
    expect(filtersFromQuery(r.query)).toEqual({
      provider: "aws",
      type: "ec2:volume",
      state: "",
      waste: "true",
      tag: "env=prod",
      q: "vol-0",
      limit: 50,
    });
  });

  it("reads malformed values as unset", () => {
    const f = filtersFromQuery(new URLSearchParams("waste=maybe&limit=7&provider=%20"));
    expect(f).toEqual(NO_FILTERS);
    expect(isFiltered(f)).toBe(false);
    expect(filtersFromQuery(new URLSearchParams("waste=FALSE&limit=500"))).toMatchObject({ waste: "false", limit: 500 });
  });

  it("round-trips through the route, leaving defaults out", () => {
    const f = { ...NO_FILTERS, provider: "gcp", tag: "team", q: "a b/c", limit: 100 };
    const h = href("explorer", [], filtersToQuery(f));
    expect(h).toBe("#/explorer?provider=gcp&tag=team&q=a+b%2Fc&limit=100");
    expect(filtersFromQuery(parseRoute(h).query)).toEqual(f);
    expect(href("explorer", [], filtersToQuery(NO_FILTERS))).toBe("#/explorer");
  });

  it("asks the API for one page with every filter and the cursor", () => {
    const f = { ...NO_FILTERS, provider: "aws", state: "available", waste: "false" as const, tag: "env=prod", type: "ec2:volume", q: "vol" };
    expect(withQuery("/api/v1/graph/nodes", nodesQuery(f, ""))).toBe(
      "/api/v1/graph/nodes?provider=aws&type=ec2%3Avolume&state=available&waste=false&tag=env%3Dprod&q=vol&limit=50",
    );
    expect(withQuery("/api/v1/graph/nodes", nodesQuery(NO_FILTERS, "AAAB"))).toBe("/api/v1/graph/nodes?limit=50&cursor=AAAB");
  });

  it("compares filters by what they ask", () => {
    expect(sameFilters({ ...NO_FILTERS, q: " x " }, { ...NO_FILTERS, q: "x" })).toBe(true);
    expect(sameFilters(NO_FILTERS, { ...NO_FILTERS, limit: 100 })).toBe(false);
    expect(sameFilters(NO_FILTERS, { ...NO_FILTERS, waste: "true" })).toBe(false);
  });
});

describe("explorer paging", () => {
  it("pages forward on a stack of cursors and back to the start", () => {
    const p1 = nextPage(FIRST_PAGE, "c1");
    const p2 = nextPage(p1, "c2");
    expect(p2).toEqual({ stack: ["", "c1"], cursor: "c2" });
    expect(rowRange(p2, 50, 50)).toBe("101–150");
    const back = previousPage(p2);
    expect(back).toEqual(p1);
    expect(previousPage(back)).toEqual(FIRST_PAGE);
    expect(previousPage(FIRST_PAGE)).toEqual(FIRST_PAGE);
  });

  it("does not page past the last page", () => {
    expect(nextPage(FIRST_PAGE, "")).toBe(FIRST_PAGE);
  });

  it("counts the rows shown", () => {
    expect(rowRange(FIRST_PAGE, 50, 0)).toBe("0");
    expect(rowRange(FIRST_PAGE, 50, 7)).toBe("1–7");
  });

  it("names the CSV after the filters and the rows", () => {
    expect(csvName({ ...NO_FILTERS, provider: "aws", waste: "true", tag: "env=prod" }, FIRST_PAGE, 50)).toBe("nodes_aws_waste-true_env=prod_1-50.csv");
  });
});
