// The waste ledger: its rows and totals are the API's, headers sort it,
// the export is the table as shown, and rows link to the resource and to
// the Explorer filtered by type.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const usd = (v) =>
  new Intl.NumberFormat(
    "en-US",
    Math.abs(v) >= 100
      ? { style: "currency", currency: "USD", maximumFractionDigits: 0 }
      : { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 },
  ).format(v);

/** The first cell of each body row. */
async function firstCells(table) {
  return table.locator("tbody tr td:first-child").allInnerTexts();
}

test("the waste ledger shows the API's types and totals, sorts, and exports what it shows", async () => {
  const page = await signedIn(browser, "viewer");
  const types = page.getByRole("table", { name: "Waste and projected savings by resource type" });
  await open(page, "Waste ledger", types.locator("tbody tr").first());
  // A scan may land between the two reads: compare until both agree.
  let ledger;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await api("GET", "/api/v1/waste-ledger?top=10");
    assert.equal(r.status, 200);
    ledger = r.body;
    const shown = await firstCells(types);
    const total = await page.getByTestId("total-savings").innerText();
    if (JSON.stringify(shown) === JSON.stringify(ledger.types.map((t) => t.type)) && total === usd(ledger.totals.projected_savings_usd_mo)) break;
    if (Date.now() > deadline) assert.fail(`the table ${JSON.stringify(shown)} is not the API's ${JSON.stringify(ledger.types.map((t) => t.type))}`);
    await page.reload();
    await types.locator("tbody tr").first().waitFor();
  }
  assert.ok(ledger.types.length > 1, "the mock estate has waste of several types");
  assert.equal(await page.getByTestId("total-flagged").innerText(), ledger.totals.flagged.toLocaleString("en-US"));
  assert.equal(await page.getByTestId("total-waste").innerText(), usd(ledger.totals.waste_usd_mo));
  const first = types.locator("tbody tr").first();
  assert.equal(await first.locator("td").nth(6).innerText(), usd(ledger.types[0].projected_savings_usd_mo));
  // A type links to the Explorer filtered by it.
  assert.equal(await first.getByRole("link").getAttribute("href"), `#/explorer?type=${encodeURIComponent(ledger.types[0].type)}`);

  // Sorting by waste, ascending, then descending.
  await types.getByRole("button", { name: "Waste $/mo" }).click();
  const ascending = [...ledger.types].sort((a, b) => a.waste_usd_mo - b.waste_usd_mo).map((t) => t.type);
  await page.waitForFunction(
    (want) => {
      const t = [...document.querySelectorAll("table")].find((x) => x.querySelector("caption")?.textContent === "Waste and projected savings by resource type");
      return t && [...t.querySelectorAll("tbody tr td:first-child")].map((c) => c.textContent).join() === want;
    },
    ascending.join(),
  );
  assert.notDeepEqual(ascending, ledger.types.map((t) => t.type), "sorting changed the order");
  assert.equal(await types.locator("th[aria-sort]").getAttribute("aria-sort"), "ascending");

  // The export is the table as shown: the header, then a row per type, in the shown order.
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export types as CSV" }).click()]);
  const csv = readFileSync(await download.path(), "utf8").trimEnd().split("\r\n");
  assert.equal(csv[0], "type,provider,resources,waste_count,optimize_count,waste_usd_mo,projected_savings_usd_mo");
  assert.equal(csv.length, ledger.types.length + 1);
  assert.deepEqual(csv.slice(1).map((l) => l.split(",")[0]), ascending);
  const t0 = ledger.types.find((t) => t.type === ascending[0]);
  assert.equal(csv[1], [t0.type, t0.provider, t0.count, t0.waste_count, t0.optimize_count, t0.waste_usd_mo, t0.projected_savings_usd_mo].join(","));

  // The top resources: every type's ten largest, linking to their pages.
  const top = page.getByRole("table", { name: "The resources with the largest savings of each type" });
  const want = ledger.types.flatMap((t) => t.top).sort((a, b) => b.projected_savings_usd_mo - a.projected_savings_usd_mo);
  assert.equal(await top.locator("tbody tr").count(), want.length);
  assert.equal(await top.locator("tbody tr").first().getByRole("link").first().innerText(), want[0].crn);
  const [d2] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export resources as CSV" }).click()]);
  const rows = readFileSync(await d2.path(), "utf8").trimEnd().split("\r\n");
  assert.equal(rows[0], "crn,type,provider,verdict,projected_savings_usd_mo,risk_score,rule,source,reason,suggested_action");
  assert.equal(rows.length, want.length + 1);
  assert.ok(rows[1].startsWith(want[0].crn + ","), rows[1]);

  // Filtering by type narrows both tables.
  const kind = ledger.types[0].type;
  await page.getByLabel("Type contains").fill(kind);
  await page.waitForFunction(
    (k) => {
      const t = [...document.querySelectorAll("table")].find((x) => x.querySelector("caption")?.textContent === "Waste and projected savings by resource type");
      const cells = t ? [...t.querySelectorAll("tbody tr td:first-child")].map((c) => c.textContent) : [];
      return cells.length > 0 && cells.every((c) => c.includes(k));
    },
    kind,
  );
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
