// History: the timeline as `GET /api/v1/history` has it, events appended
// while the page is open arriving live (and only when the filters admit
// them), the type filter, the chain's verification, and axe.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

const RUN = `e2e-hist-${process.pid}`;
const added = [];
let isolated = null;

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  for (const id of added) await api("DELETE", `/api/v1/policies/${encodeURIComponent(id)}`);
  if (isolated) await api("DELETE", `/api/v1/isolation/${encodeURIComponent(isolated)}`);
  await browser?.close();
});

async function addRule(suffix) {
  const id = `${RUN}-${suffix}`;
  const r = await api("POST", "/api/v1/policies", { rules: [{ id, condition: 'provider == "azure"', action: "warn", message: "e2e" }] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  added.push(id);
  return id;
}

async function shownSeqs(page) {
  return page.getByTestId("history-events").locator("li[data-seq]").evaluateAll((li) => li.map((x) => Number(x.getAttribute("data-seq"))));
}

async function openHistory(page) {
  await open(page, "History", page.getByTestId("history-events"));
}

test("the timeline shows the ledger's newest events and the chain verified", async () => {
  // At least one event about a rule, so the ledger is not only scans.
  await addRule("first");
  const apiPage = (await api("GET", "/api/v1/history?limit=50")).body;
  assert.ok(apiPage.events.length > 0);
  const page = await signedIn(browser, "admin");
  await openHistory(page);
  const newest = apiPage.events[0].seq;
  // Events appended since the API was asked come on top; below them, the same events.
  const shown = (await shownSeqs(page)).filter((s) => s <= newest);
  const want = apiPage.events.slice(0, 10).map((e) => e.seq);
  assert.deepEqual(shown.slice(0, want.length), want);
  const first = page.locator(`li[data-seq="${newest}"]`);
  const e = apiPage.events[0];
  assert.equal(await first.locator(".hist-type").textContent(), e.type);
  assert.equal(await first.locator("time").getAttribute("datetime"), e.ts);
  assert.match(await first.textContent(), new RegExp(`hash ${e.hash.slice(0, 12)}`));
  if (e.message) assert.ok((await first.textContent()).includes(e.message));
  // The payload opens as JSON.
  await first.locator("details summary").click();
  assert.deepEqual(JSON.parse(await first.locator("details pre").textContent()), e.meta);

  const verify = (await api("GET", "/api/v1/ledger/verify")).body;
  assert.equal(verify.ok, true);
  const card = page.getByTestId("ledger-verify");
  await card.getByText("Chain verified").waitFor();
  assert.match(await card.textContent(), /verified/);
  await card.getByRole("button", { name: "Verify again" }).click();
  await card.getByText("Chain verified").waitFor();

  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("an event appended while the page is open appears on top without a reload", async () => {
  const page = await signedIn(browser, "admin");
  await openHistory(page);
  await page.getByTestId("history-live").filter({ hasText: "Live" }).waitFor();
  await page.evaluate(() => {
    window.__notReloaded = true;
  });
  const id = await addRule("live");
  const item = page.locator('li[data-type="POLICY_CHANGE"]').filter({ hasText: `policy rule ${id} added` });
  await item.waitFor();
  assert.equal(await page.evaluate(() => window.__notReloaded), true, "the page was not reloaded");
  const seqs = await shownSeqs(page);
  assert.equal(Number(await item.getAttribute("data-seq")), seqs[0], "the new event is on top");
  assert.match(await item.textContent(), /new/);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("the type filter selects the API's events and keeps other types out of the live feed", async () => {
  await addRule("filter");
  const page = await signedIn(browser, "admin");
  await openHistory(page);
  await page.getByLabel("Type").fill("POLICY_CHANGE");
  await page.waitForURL(/type=POLICY_CHANGE/);
  const want = (await api("GET", "/api/v1/history?type=POLICY_CHANGE&limit=50")).body;
  await page.getByTestId("history-count").filter({ hasText: `${want.total} ` }).waitFor();
  const types = await page.getByTestId("history-events").locator("li").evaluateAll((li) => li.map((x) => x.getAttribute("data-type")));
  assert.ok(types.length > 0);
  assert.ok(types.every((t) => t === "POLICY_CHANGE"), `only POLICY_CHANGE: ${types}`);
  assert.deepEqual(await shownSeqs(page), want.events.map((e) => e.seq));

  // Live: an ISOLATION is left out, the POLICY_CHANGE after it comes in.
  const node = (await api("GET", "/api/v1/graph/nodes?limit=1")).body;
  const crn = node.nodes[0]?.crn;
  assert.ok(crn, "a node to ignore");
  const iso = await api("POST", "/api/v1/isolation", { crn, reason_code: "e2e history filter", ttl_seconds: 3600 });
  assert.ok(iso.status === 200 || iso.status === 201, JSON.stringify(iso.body));
  isolated = crn;
  const id = await addRule("after-isolation");
  await page.locator('li[data-type="POLICY_CHANGE"]').filter({ hasText: `policy rule ${id} added` }).waitFor();
  assert.equal(await page.locator('li[data-type="ISOLATION"]').count(), 0);

  // Cleared, the filter leaves the route and every type comes back.
  await page.getByRole("button", { name: "Clear" }).click();
  await page.locator('li[data-type="ISOLATION"]').first().waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
