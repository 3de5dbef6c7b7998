// The Overview against the real mock estate: its totals, breakdown, trend
// and phases are the API's; a viewer cannot scan; an operator's scan
// refreshes the view when its SCAN_COMPLETED event arrives.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn, token } from "./harness.mjs";

const usd0 = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", maximumFractionDigits: 0 });
const usd2 = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 });
/** As the dashboard shows money (lib/format.ts `money`). */
const money = (v) => (Math.abs(v) >= 100 ? usd0.format(v) : usd2.format(v));
const count = (v) => new Intl.NumberFormat("en-US").format(v);

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

async function lastScan() {
  const r = await api("GET", "/api/v1/history?type=SCAN_COMPLETED&limit=1");
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.ok(r.body.events.length > 0, "the test daemon has completed a scan");
  return r.body.events[0].meta;
}

test("the Overview shows the estate's real totals, breakdown by provider, trend and the last scan's ten phases", async () => {
  const stats = (await api("GET", "/api/v1/graph/stats")).body;
  const breakdown = await api("GET", "/api/v1/graph/breakdown?by=provider&limit=10");
  assert.equal(breakdown.status, 200, JSON.stringify(breakdown.body));
  const scan = await lastScan();

  const page = await signedIn(browser, "viewer");
  await open(page, "Overview", page.getByTestId("kpi-cost"));
  await page.getByTestId("kpi-cost").filter({ hasText: money(stats.total_cost_usd_mo) }).waitFor();
  await page.getByTestId("kpi-savings").filter({ hasText: money(stats.projected_savings_usd_mo) }).waitFor();
  await page.getByTestId("kpi-nodes").filter({ hasText: count(stats.active_nodes) }).waitFor();
  await page.getByTestId("kpi-waste-nodes").filter({ hasText: count(stats.waste_nodes) }).waitFor();
  await page.getByTestId("kpi-edges").filter({ hasText: count(stats.total_edges) }).waitFor();
  await page.getByTestId("kpi-waste").filter({ hasText: money(scan.waste_usd_mo) }).waitFor();
  const rfc = await page.getByTestId("kpi-last-scan").locator("time").getAttribute("datetime");
  assert.match(rfc, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(await page.getByText("Mock estate.").isVisible(), stats.simulated, "the mock notice shows exactly when the estate is simulated");

  // The providers of the chart are those the API reports, in its order.
  const chart = page.getByTestId("breakdown-provider");
  await chart.waitFor();
  const keys = await chart.locator("g.chart-row").evaluateAll((gs) => gs.map((g) => g.getAttribute("data-key")));
  const expected = breakdown.body.groups.map((g) => g.key);
  assert.deepEqual(keys.slice(0, expected.length), expected);
  assert.deepEqual([...expected].sort(), Object.keys(stats.providers).sort(), "every provider of the estate is in the breakdown");
  const label = await chart.getAttribute("aria-label");
  assert.ok(label.includes(money(breakdown.body.groups[0].cost_usd_mo)), label);

  // The trend ends at the last scan; its summary names that scan's cost.
  const trend = page.getByTestId("trend");
  await trend.waitFor();
  assert.ok((await trend.getAttribute("aria-label")).includes(money(scan.cost_usd_mo)));

  // Ten phases, in SPEC order, from the last scan's report.
  assert.equal(scan.phases?.length, 10, "the scan report carries its ten phases");
  const phases = page.getByTestId("phases");
  await phases.waitFor();
  const names = await phases.locator("g.chart-row").evaluateAll((gs) => gs.map((g) => g.getAttribute("data-key")));
  assert.deepEqual(names, [
    "engine.init",
    "engine.time_travel",
    "engine.plugin_scan",
    "engine.heuristics",
    "engine.pattern",
    "engine.ghost_linker",
    "engine.formal_verify",
    "engine.sau",
    "engine.policy",
    "engine.signal_analysis",
  ]);
  assert.equal(await phases.locator("rect.chart-bar").count(), scan.phases.filter((p) => p.duration_ms > 0).length);

  // A viewer sees no Scan now button, and the API refuses the scan anyway.
  assert.equal(await page.getByRole("button", { name: "Scan now" }).count(), 0);
  const refused = await api("POST", "/api/v1/engine/scan", {}, await token("viewer"));
  assert.equal(refused.status, 403, JSON.stringify(refused.body));

  assert.deepEqual(await accessibilityProblems(page), []);

  assert.deepEqual(page.problems, []);

  // A provider's bar opens the Explorer filtered to it.
  const first = expected[0];
  await chart.locator(`g.chart-row[data-key="${first}"]`).click();
  await page.waitForURL((u) => u.hash === `#/explorer?provider=${encodeURIComponent(first)}`);
  await page.context().close();
});

test("an operator's scan: a 409 while one runs reads clearly, and the view refreshes when a scan completes", async () => {
  const page = await signedIn(browser, "operator");
  await open(page, "Overview", page.getByTestId("kpi-cost"));
  const scanNow = page.getByRole("button", { name: "Scan now" });
  await scanNow.waitFor();

  // Another scan is running: the button's request gets 409.
  const started = await api("POST", "/api/v1/engine/scan", {});
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const seq = started.body.scan_seq;
  await scanNow.click();
  await page.getByRole("alert").filter({ hasText: "A scan is already running" }).waitFor();
  // Its SCAN_COMPLETED event refreshes the view without a reload.
  await page.getByRole("heading", { name: `Last scan (scan ${seq})` }).waitFor({ timeout: 120_000 });
  assert.equal(await page.getByRole("alert").count(), 0, "the conflict is cleared once the scan completed");

  // The button's own scan.
  await scanNow.click();
  const status = page.getByRole("status").filter({ hasText: /^Scan \d+ started/ });
  await status.waitFor();
  const mine = Number(/Scan (\d+)/.exec(await status.textContent())[1]);
  assert.ok(mine > seq);
  await page.getByRole("status").filter({ hasText: `Scan ${mine} completed` }).waitFor({ timeout: 120_000 });
  await page.getByRole("heading", { name: `Last scan (scan ${mine})` }).waitFor();
  const stats = (await api("GET", "/api/v1/graph/stats")).body;
  await page.getByTestId("kpi-nodes").filter({ hasText: count(stats.active_nodes) }).waitFor();
  assert.deepEqual(
    page.problems.filter((p) => !p.includes("409")),
    [],
  );
  await page.context().close();
});
