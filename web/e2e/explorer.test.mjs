// Explorer: the node table paged and filtered by the server, its figures
// checked against the API's own answers.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn, steady, URL_BASE } from "./harness.mjs";

let browser;
let page;
before(async () => {
  browser = await launch();
  page = await signedIn(browser, "viewer");
});
after(async () => {
  await browser?.close();
});

const count = (n) => n.toLocaleString("en-US");
const exactly = (s) => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);

async function nodes(query) {
  const r = await api("GET", `/api/v1/graph/nodes?${new URLSearchParams(query)}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** Waits until the table shows the rows `range` of `total`, then reads their CRNs. */
async function shown(range, total) {
  await page.getByTestId("explorer-total").filter({ hasText: exactly(count(total)) }).waitFor();
  await page.getByTestId("explorer-range").filter({ hasText: exactly(range) }).waitFor();
  await page.locator('.explorer-table[aria-busy="false"]').waitFor();
  return page.locator(".explorer-table tbody tr td:first-child a").evaluateAll((as) => as.map((a) => a.getAttribute("title")));
}

test("the Explorer shows the API's total and its pages, forth and back", async () => {
  await steady(async (attempt) => {
    const first = await nodes({ limit: 50 });
    assert.ok(first.total > 100, "the mock estate has more than two pages");
    const second = await nodes({ limit: 50, cursor: first.next_cursor });

    if (attempt > 1) await page.reload();
    await open(page, "Explorer", page.getByTestId("explorer-total"));
    const rows1 = await shown("1–50", first.total);
    assert.deepEqual(rows1, first.nodes.map((n) => n.crn));

    // The CSV export holds the page shown, with full CRNs.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export page as CSV" }).click()]);
    assert.equal(download.suggestedFilename(), "nodes_1-50.csv");
    const csv = (await readFile(await download.path(), "utf8")).trimEnd().split("\r\n");
    assert.equal(csv[0], "crn,type,provider,account,region,state,cost_usd_mo,is_waste,waste_reason,risk_score,phase");
    assert.deepEqual(csv.slice(1).map((l) => l.split(",")[0].replace(/^"|"$/g, "")), rows1);

    await page.getByRole("button", { name: "Next page" }).first().click();
    const rows2 = await shown("51–100", first.total);
    assert.deepEqual(rows2, second.nodes.map((n) => n.crn));
    assert.ok(!rows2.some((c) => rows1.includes(c)), "the second page shows other rows");

    await page.getByRole("button", { name: "Previous page" }).first().click();
    assert.deepEqual(await shown("1–50", first.total), rows1);
    assert.equal(await page.getByRole("button", { name: "Previous page" }).first().isDisabled(), true);

    // The page size is chosen from the toolbar and kept in the address.
    await page.getByLabel("Page size").selectOption("100");
    const hundred = await shown("1–100", first.total);
    assert.equal(hundred.length, 100);
    assert.match(page.url(), /limit=100/);

    assert.deepEqual(await accessibilityProblems(page), []);
    assert.deepEqual(page.problems, []);
  });
});

test("a provider filter from the address applies", async () => {
  await steady(async (attempt) => {
    const stats = await api("GET", "/api/v1/graph/stats");
    const providers = Object.entries(stats.body.providers).sort((a, b) => a[1] - b[1]);
    assert.ok(providers.length >= 2, "the mock estate spans providers");
    const [provider] = providers[0];
    const expected = await nodes({ provider, limit: 50 });
    assert.ok(expected.total > 0 && expected.total < stats.body.active_nodes);

    await page.goto(`${URL_BASE}/#/explorer?provider=${encodeURIComponent(provider)}`);
    if (attempt > 1) await page.reload();
    const rows = await shown(`1–${Math.min(50, expected.total)}`, expected.total);
    assert.deepEqual(rows, expected.nodes.map((n) => n.crn));
    const cells = await page.locator(".explorer-table tbody tr td:nth-child(3)").allInnerTexts();
    assert.ok(cells.length > 0 && cells.every((c) => c === provider), `every row is of ${provider}`);
    assert.equal(await page.getByLabel("Provider").inputValue(), provider);
    assert.deepEqual(page.problems, []);
  });
});

test("searching by a CRN substring finds that node", async () => {
  await steady(async (attempt) => {
    await page.goto(`${URL_BASE}/#/explorer`);
    if (attempt > 1) await page.reload();
    await page.getByTestId("explorer-total").waitFor();
    // A node beyond the first page, so that finding it proves the search.
    const first = await nodes({ limit: 50 });
    const later = await nodes({ limit: 50, cursor: first.next_cursor });
    const target = later.nodes[17];
    const needle = target.physical_id.slice(-10).toUpperCase();
    const expected = await nodes({ q: needle, limit: 50 });
    assert.ok(expected.nodes.some((n) => n.crn === target.crn), "the API finds it by a case-insensitive substring");
    assert.ok(expected.total < first.total, "the search narrows the listing");

    await page.getByLabel("CRN contains").fill(needle);
    const rows = await shown(`1–${Math.min(50, expected.total)}`, expected.total);
    assert.ok(rows.includes(target.crn), `${target.crn} is listed`);
    assert.match(page.url(), new RegExp(`q=${encodeURIComponent(needle)}`));
    await page.getByRole("button", { name: "Clear filters" }).click();
    await shown("1–50", first.total);
    assert.deepEqual(page.problems, []);
  });
});

test("a row opens the node's page", async () => {
  await steady(async (attempt) => {
    const first = await nodes({ limit: 50 });
    const target = first.nodes[3];
    await page.goto(`${URL_BASE}/#/explorer`);
    if (attempt > 1) await page.reload();
    await shown("1–50", first.total);
    // A click anywhere on the row (here its type), not only on its link.
    await page.locator(".explorer-table tbody tr").nth(3).locator("td").nth(1).click();
    await page.locator(".node-crn").filter({ hasText: exactly(target.crn) }).first().waitFor();
    assert.match(decodeURIComponent(page.url()), new RegExp(`#/node/${target.crn.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
    await page.getByRole("heading", { level: 2, name: "Properties" }).waitFor();
    assert.deepEqual(page.problems, []);
  });
});
