// Policies: the mesh as the API has it, a rule added through the editor
// with its live dry-run, mode toggle, reorder by keyboard, what a viewer
// sees, and axe. Every rule a test adds is removed at the end.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

const RUN = `e2e-pol-${process.pid}`;
const A = `${RUN}-a`;
const B = `${RUN}-b`;
const ADDED = `${RUN}-added`;
const CONDITION = 'kind == "volume" && provider == "aws"';
const count = new Intl.NumberFormat("en-US");

let browser;
before(async () => {
  browser = await launch();
  const r = await api("POST", "/api/v1/policies", {
    rules: [
      { id: A, condition: 'provider == "gcp"', action: "warn", message: "e2e rule a" },
      { id: B, condition: 'kind == "instance" && state == "stopped"', action: "warn", message: "e2e rule b", mode: "shadow" },
    ],
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});
after(async () => {
  for (const id of [A, B, ADDED]) await api("DELETE", `/api/v1/policies/${encodeURIComponent(id)}`);
  await browser?.close();
});

/** The page's problems, less the refusals a test provokes on purpose. */
function unexpected(page, ...statuses) {
  return page.problems.filter((p) => !statuses.some((s) => p.includes(`status of ${s}`)));
}

async function rowIds(page) {
  return page.getByTestId("rules").locator("tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-rule")));
}

async function openPolicies(page) {
  await open(page, "Policies", page.getByTestId("rules").locator(`tr[data-rule="${B}"]`));
}

test("the mesh lists the API's rules in order with their counts", async () => {
  const page = await signedIn(browser, "admin");
  await openPolicies(page);
  const mesh = (await api("GET", "/api/v1/policies/mesh")).body;
  assert.deepEqual(await rowIds(page), mesh.policies.map((p) => p.id));
  for (const p of mesh.policies.filter((x) => x.id === A || x.id === B)) {
    const row = page.getByTestId("rules").locator(`tr[data-rule="${p.id}"]`);
    assert.equal(await row.getByTestId("mode").textContent(), p.mode);
    const cells = await row.locator("td.num").allTextContents();
    assert.equal(cells[1], count.format(p.trigger_count));
    assert.match(await row.textContent(), new RegExp(p.condition.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  }
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("a rule is tried as it is typed, refused at its field, then added and recorded in History", async () => {
  const page = await signedIn(browser, "admin");
  await openPolicies(page);
  const condition = page.getByLabel("Condition (CEL)");

  // A condition that does not compile: the message and the marked position.
  await condition.fill("cost >");
  const compile = page.getByTestId("dry-run-error");
  await compile.waitFor();
  assert.match(await compile.textContent(), /line 1, column 7/);
  await compile.locator("mark").waitFor();

  // A condition that compiles: the count the API gives for it.
  const dry = (await api("POST", "/api/v1/policies/dry-run", { condition: CONDITION, limit: 10 })).body;
  assert.ok(dry.count > 0, "the mock estate has AWS volumes");
  await condition.fill(CONDITION);
  await page.getByTestId("dry-run-count").filter({ hasText: count.format(dry.count) }).waitFor();
  const samples = page.getByTestId("dry-run").getByRole("link");
  assert.equal(await samples.count(), Math.min(10, dry.crns.length));
  assert.match(await samples.first().getAttribute("href"), /^#\/node\//);
  assert.deepEqual(await accessibilityProblems(page), []);

  // An id already taken: the API's 409 message at the id field.
  await page.getByLabel("Id", { exact: true }).fill(A);
  await page.getByLabel("Message").fill("e2e: AWS volumes");
  await page.getByLabel("Mode").selectOption("shadow");
  await page.getByRole("button", { name: "Add rule" }).click();
  const idError = page.locator("#pol-id-error");
  await idError.waitFor();
  assert.match(await idError.textContent(), new RegExp(A));

  await page.getByLabel("Id", { exact: true }).fill(ADDED);
  await page.getByRole("button", { name: "Add rule" }).click();
  await page.getByTestId("rules").locator(`tr[data-rule="${ADDED}"]`).waitFor();
  const rule = (await api("GET", "/api/v1/policies")).body.rules.find((r) => r.id === ADDED);
  assert.ok(rule, "the API has the rule");
  assert.equal(rule.condition, CONDITION);
  assert.equal(rule.mode, "shadow");
  assert.equal(rule.message, "e2e: AWS volumes");

  // Its POLICY_CHANGE is in History.
  await open(page, "History", page.getByTestId("history-events"));
  await page.locator('li[data-type="POLICY_CHANGE"]').filter({ hasText: `policy rule ${ADDED} added` }).waitFor();
  assert.deepEqual(unexpected(page, 409, 422), []);
  await page.context().close();
});

test("a rule switches between shadow and enforcing", async () => {
  const page = await signedIn(browser, "admin");
  await openPolicies(page);
  const row = page.getByTestId("rules").locator(`tr[data-rule="${B}"]`);
  assert.equal(await row.getByTestId("mode").textContent(), "shadow");
  await row.getByRole("button", { name: `Switch ${B} to enforcing` }).click();
  await row.getByTestId("mode").filter({ hasText: "enforcing" }).waitFor();
  const after = (await api("GET", "/api/v1/policies")).body.rules.find((r) => r.id === B);
  assert.equal(after.mode, "enforcing");
  await row.getByRole("button", { name: `Switch ${B} to shadow` }).click();
  await row.getByTestId("mode").filter({ hasText: "shadow" }).waitFor();
  assert.equal((await api("GET", "/api/v1/policies")).body.rules.find((r) => r.id === B).mode, "shadow");
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("rules move up and down from the keyboard and the API's order follows", async () => {
  const page = await signedIn(browser, "admin");
  await openPolicies(page);
  const before = (await api("GET", "/api/v1/policies")).body.rules.map((r) => r.id);
  const from = before.indexOf(B);
  assert.ok(from > 0, "rule b is not first");

  const up = page.getByRole("button", { name: `Move ${B} up` });
  await up.focus();
  await page.keyboard.press("Enter");
  await page.getByRole("status").filter({ hasText: `${B} moved to position ${from}` }).waitFor();
  const expected = before.slice();
  expected.splice(from, 1);
  expected.splice(from - 1, 0, B);
  assert.deepEqual((await api("GET", "/api/v1/policies")).body.rules.map((r) => r.id), expected);
  assert.deepEqual(await rowIds(page), expected);
  // Focus comes back to the moved rule once the list is drawn again.
  const focusedOnB = await page
    .waitForFunction((b) => new RegExp(`^Move ${b} (up|down)$`).test(document.activeElement?.getAttribute("aria-label") ?? ""), B, { timeout: 10_000 })
    .then(() => true, () => false);
  const focused = await page.evaluate(() => document.activeElement?.getAttribute("aria-label"));
  assert.ok(focusedOnB, `focus stays on the moved rule (it is on ${JSON.stringify(focused)})`);

  // And back down with the keyboard alone.
  await page.getByRole("button", { name: `Move ${B} down` }).focus();
  await page.keyboard.press("Space");
  await page.getByRole("status").filter({ hasText: `${B} moved to position ${from + 1}` }).waitFor();
  assert.deepEqual((await api("GET", "/api/v1/policies")).body.rules.map((r) => r.id), before);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("a viewer sees the mesh and may try a condition, with nothing to change", async () => {
  const page = await signedIn(browser, "viewer");
  await openPolicies(page);
  for (const name of [/^Move /, /^Switch /, /^Remove /, /^Add rule$/, /^Add \d+ rules$/]) {
    assert.equal(await page.getByRole("button", { name }).count(), 0, `no ${name} button`);
  }
  assert.equal(await page.getByLabel("Id", { exact: true }).count(), 0);
  assert.equal(await page.locator('tr[draggable="true"]').count(), 0);
  const dry = (await api("POST", "/api/v1/policies/dry-run", { condition: 'provider == "gcp"', limit: 10 })).body;
  await page.getByLabel("Condition (CEL)").fill('provider == "gcp"');
  await page.getByTestId("dry-run-count").filter({ hasText: count.format(dry.count) }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
