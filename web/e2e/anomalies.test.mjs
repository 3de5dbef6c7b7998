// Cost anomalies: after a second scan the mock estate's changes show as
// anomalies; the table is the API's, headers sort it, the export is the
// table as shown, and rows link to the resource and the Explorer.
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

const CAPTION = "Resources whose cost changed unusually, highest |z| first";

/** The anomalies of a scan compared with an earlier one: scans once more if none was. */
async function anomalies() {
  let r = await api("GET", "/api/v1/anomalies");
  assert.equal(r.status, 200, JSON.stringify(r.body));
  if (r.body.scan_seq >= 2 && r.body.nodes.length > 0) return r.body;
  const scan = await api("POST", "/api/v1/engine/scan", { wait: true });
  assert.equal(scan.status, 200, JSON.stringify(scan.body));
  // The answer is shared for 30 s: wait for one computed after that scan.
  const deadline = Date.now() + 120_000;
  for (;;) {
    r = await api("GET", "/api/v1/anomalies");
    if (r.body.scan_seq >= 2 && r.body.nodes.length > 0) return r.body;
    if (Date.now() > deadline) assert.fail(`no anomalies after a second scan: ${JSON.stringify(r.body.summary)}`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

test("anomalies are the API's, sort, and export what is shown", async () => {
  let a = await anomalies();
  const page = await signedIn(browser, "viewer");
  const table = page.getByRole("table", { name: CAPTION });
  await open(page, "Anomalies", table.locator("tbody tr td a").first());
  // The page and the test read the same cached answer unless it expired in between.
  const deadline = Date.now() + 90_000;
  for (;;) {
    const shown = await table.locator("tbody tr td:first-child").allInnerTexts();
    if (JSON.stringify(shown) === JSON.stringify(a.nodes.map((n) => n.crn))) break;
    if (Date.now() > deadline) assert.fail(`the table is not the API's: ${shown.length} rows, ${a.nodes.length} from the API`);
    await page.reload();
    await table.locator("tbody tr td a").first().waitFor();
    a = (await api("GET", "/api/v1/anomalies")).body;
  }
  assert.ok(a.nodes.length > 1);
  assert.equal(await page.getByTestId("node-anomalies").innerText(), a.summary.node_anomalies.toLocaleString("en-US"));
  const first = table.locator("tbody tr").first();
  assert.equal(await first.getByRole("link").first().getAttribute("href"), `#/node/${encodeURIComponent(a.nodes[0].crn)}`);
  assert.equal(await first.getByRole("link").nth(1).getAttribute("href"), `#/explorer?type=${encodeURIComponent(a.nodes[0].type)}`);

  // Sorting by the change in dollars, smallest first.
  await table.getByRole("button", { name: "Change $/mo" }).click();
  const byChange = [...a.nodes]
    .map((n, i) => ({ n, i }))
    .sort((x, y) => x.n.change - y.n.change || x.i - y.i)
    .map((x) => x.n.crn);
  assert.notDeepEqual(byChange, a.nodes.map((n) => n.crn), "sorting changed the order");
  await page.waitForFunction(
    ([cap, want]) => {
      const t = [...document.querySelectorAll("table")].find((x) => x.querySelector("caption")?.textContent === cap);
      return t && [...t.querySelectorAll("tbody tr td:first-child")].map((c) => c.textContent).join() === want;
    },
    [CAPTION, byChange.join()],
  );

  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export resources as CSV" }).click()]);
  const csv = readFileSync(await download.path(), "utf8").trimEnd().split("\r\n");
  assert.equal(csv[0], "crn,type,provider,kind,previous_usd_mo,current_usd_mo,change_usd_mo,change_pct,z,scan_seq");
  assert.equal(csv.length, a.nodes.length + 1);
  assert.deepEqual(csv.slice(1).map((l) => l.split(",")[0]), byChange);

  // Filtering by provider asks the API again.
  const provider = a.nodes[0].provider;
  await page.getByLabel("Provider").selectOption(provider);
  const want = (await api("GET", `/api/v1/anomalies?provider=${provider}`)).body;
  await page.getByRole("heading", { name: `Resources (${want.nodes.length.toLocaleString("en-US")} of ${want.matching.nodes.toLocaleString("en-US")})` }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
