// The remediation board: its columns carry the API's counts; an operator's
// approval from the board runs the plan (EXECUTION_COMMIT); a plan that
// changed since it was shown is refused with a clear message; bulk
// decisions report per item; a viewer sees no decision at all, and the API
// refuses one anyway.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn, token, URL_BASE } from "./harness.mjs";

const STAGES = ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied", "rejected"];

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** Polls `check` until it returns a truthy value, or fails with `what` at the deadline. */
async function until(what, check, ms = 60_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function queue(query = "") {
  const r = await api("GET", `/api/v1/remediation/queue${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/**
 * Pending items whose plan can run now: listed in `pending`, with a plan,
 * no blockers; each with its plan as the API shows it. Skips `skip`.
 */
async function pendingItems(n, skip = new Set()) {
  const q = await queue("?stage=pending&limit=200");
  const out = [];
  for (const it of q.stages.pending) {
    if (out.length >= n) break;
    if (skip.has(it.crn) || it.blockers.length > 0 || !it.plan_hash) continue;
    const plan = await api("GET", `/api/v1/plan?crn=${encodeURIComponent(it.crn)}`);
    if (plan.status !== 200 || plan.body.plan_hash !== it.plan_hash || plan.body.steps.length === 0) continue;
    out.push({ crn: it.crn, hash: it.plan_hash, plan: plan.body });
  }
  assert.equal(out.length, n, "the mock estate has enough pending items");
  return out;
}

/** Opens the board on one item (`?crn=`) and waits for its plan. */
async function openItem(page, crn, hash) {
  await page.evaluate((h) => {
    location.hash = h;
  }, `#/remediation?crn=${encodeURIComponent(crn)}`);
  await page.getByRole("heading", { level: 1, name: "Remediation board" }).waitFor();
  await page.getByTestId("plan-hash").filter({ hasText: hash }).waitFor({ timeout: 30_000 });
}

const used = new Set();

test("the columns are SPEC 3.1's stages with the API's counts and savings", async () => {
  const page = await signedIn(browser, "operator");
  await open(page, "Remediation", page.getByTestId("count-pending"));
  const headings = await page.locator("[data-stage] h2").allInnerTexts();
  assert.equal(headings.length, STAGES.length);
  const order = await page.locator("[data-stage]").evaluateAll((els) => els.map((e) => e.getAttribute("data-stage")));
  assert.deepEqual(order, STAGES);
  // A scan may land between the two reads: compare until both agree.
  const usd = (v) =>
    new Intl.NumberFormat("en-US", Math.abs(v) >= 100
      ? { style: "currency", currency: "USD", maximumFractionDigits: 0 }
      : { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v);
  let seen;
  await until("board counts equal the API's", async () => {
    const q = await queue("?limit=1");
    const board = {};
    const want = {};
    for (const s of STAGES) {
      board[s] = [
        Number((await page.getByTestId(`count-${s}`).innerText()).replace(/[^0-9]/g, "")),
        await page.getByTestId(`savings-${s}`).innerText(),
      ];
      want[s] = [q.counts[s], usd(q.savings_usd_mo[s])];
    }
    seen = { board, want };
    return JSON.stringify(board) === JSON.stringify(want);
  }).catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(seen)}`);
  });
  const q = await queue("?limit=1");
  assert.ok(q.counts.pending > 0, "the mock estate has pending items");
  // Each column lists at most its first page, and says how many it shows.
  const listed = await page.locator('[data-stage="pending"] li').count();
  assert.equal(listed, Math.min(25, q.counts.pending));
  assert.deepEqual(await accessibilityProblems(page), []);
  await page.context().close();
});

test("an operator approves an item from the board and its plan runs", async () => {
  const [item] = await pendingItems(1, used);
  used.add(item.crn);
  const page = await signedIn(browser, "operator");
  await open(page, "Remediation", page.getByTestId("count-pending"));
  await openItem(page, item.crn, item.hash);
  // The plan as the API has it: steps with inverses, CLI, the diff.
  const panel = page.getByRole("complementary");
  for (const s of item.plan.steps) {
    await panel.getByText(s.cli, { exact: true }).waitFor();
  }
  assert.ok((await panel.getByLabel("Terraform-style diff").innerText()).includes("will be destroyed") || item.plan.terraform === "");
  assert.deepEqual(await accessibilityProblems(page), []);

  // History open beside the board (a second tab of the same session), so
  // the execution must arrive there live, with no reload.
  const history = await page.context().newPage();
  await history.goto(`${URL_BASE}/#/history?type=EXECUTION_COMMIT`);
  await history.getByTestId("history-events").or(history.getByTestId("history-count")).first().waitFor();
  await history.getByTestId("history-live").filter({ hasText: /live/i }).waitFor();
  await history.evaluate(() => {
    window.__sameDocument = true;
  });

  await panel.getByRole("button", { name: "Approve", exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Approve and run" }).click();
  await panel.getByTestId("decision-message").filter({ hasText: "Approved" }).waitFor({ timeout: 60_000 });
  await history
    .locator('li.hist-event[data-type="EXECUTION_COMMIT"]')
    .filter({ has: history.locator(`a[title="${item.crn}"]`) })
    .first()
    .waitFor({ timeout: 60_000 });
  assert.equal(await history.evaluate(() => window.__sameDocument === true), true, "History was not reloaded");

  const crn = encodeURIComponent(item.crn);
  const commits = await until("an EXECUTION_COMMIT for the item", async () => {
    const r = await api("GET", `/api/v1/history?type=EXECUTION_COMMIT&crn=${crn}`);
    assert.equal(r.status, 200);
    return r.body.events.length >= item.plan.steps.length ? r.body.events : null;
  });
  assert.ok(commits.every((e) => e.crn === item.crn));
  const approvals = await api("GET", `/api/v1/history?type=APPROVAL&crn=${crn}`);
  assert.equal(approvals.body.events.length, 1);
  assert.equal(approvals.body.events[0].meta.plan_hash, item.hash, "the decision named the plan shown");
  // The panel follows: the item is now applied.
  await panel.locator("dd").filter({ hasText: /^applied/ }).first().waitFor({ timeout: 30_000 });
  await page.context().close();
});

test("a plan that changed since it was shown is refused, and the board says so", async () => {
  const [item] = await pendingItems(1, used);
  used.add(item.crn);
  const page = await signedIn(browser, "operator");
  await open(page, "Remediation", page.getByTestId("count-pending"));
  await openItem(page, item.crn, item.hash);
  const panel = page.getByRole("complementary");
  await panel.getByRole("button", { name: "Approve", exact: true }).waitFor();

  // Someone else holds the item at the gate in between.
  const held = await api("POST", "/api/v1/remediation/move", { crn: item.crn, plan_hash: item.hash, to: "sau_gate", reason: "checking with the owner" });
  assert.equal(held.status, 200, JSON.stringify(held.body));
  await panel.getByText("This item changed since you opened it").waitFor({ timeout: 30_000 });

  await panel.getByRole("button", { name: "Approve", exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Approve and run" }).click();
  const alert = panel.getByRole("alert").filter({ hasText: "This plan changed since you opened it" });
  await alert.waitFor();
  const text = await alert.innerText();
  assert.match(text, /Review the new plan\.$/);
  assert.ok(text.includes("sau_gate"), `the API's reason is shown: ${text}`);
  // The new plan is loaded: the item is at the gate, so approving is gone and the override is offered.
  await panel.getByRole("button", { name: "Override the gate" }).waitFor();
  assert.equal(await panel.getByRole("button", { name: "Approve", exact: true }).count(), 0);
  // The API says the same to anyone naming that plan now.
  const direct = await api("POST", "/api/v1/remediation/approve", { crn: item.crn, plan_hash: item.hash }, await token("operator"));
  assert.equal(direct.status, 409);
  const commits = await api("GET", `/api/v1/history?type=EXECUTION_COMMIT&crn=${encodeURIComponent(item.crn)}`);
  assert.equal(commits.body.events.length, 0, "nothing ran");
  assert.deepEqual(await accessibilityProblems(page), []);
  // Release the hold.
  const back = await api("POST", "/api/v1/remediation/move", { crn: item.crn, plan_hash: item.hash, to: "pending" });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  await page.context().close();
});

test("a bulk reject reports each item", async () => {
  const page = await signedIn(browser, "operator");
  await open(page, "Remediation", page.getByTestId("count-pending"));
  const column = page.locator('[data-stage="pending"]');
  const boxes = column.getByRole("checkbox");
  await boxes.first().waitFor();
  const names = [];
  for (const i of [0, 1]) {
    await boxes.nth(i).check();
    names.push((await boxes.nth(i).getAttribute("aria-label")).replace(/^Select (.*) for a bulk decision$/, "$1"));
  }
  const bar = page.getByRole("region", { name: "Bulk decision" });
  await bar.getByText("2 selected").waitFor();
  await bar.getByRole("button", { name: "Reject selected" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Reject 2" }).click();
  const result = page.getByRole("table", { name: "The result of each item of the bulk decision" });
  await result.waitFor();
  const rows = await result.locator("tbody tr").allInnerTexts();
  assert.equal(rows.length, 2);
  assert.ok(rows.every((r) => r.includes("done") && r.includes("200")), rows.join("\n"));
  const rejected = await queue("?stage=rejected&limit=1000");
  for (const n of names) {
    assert.ok(rejected.stages.rejected.some((i) => i.crn.endsWith(n)), `${n} is rejected`);
  }
  await page.context().close();
});

test("a viewer sees the board read-only, and the API refuses a forced approval", async () => {
  const [item] = await pendingItems(1, used);
  const page = await signedIn(browser, "viewer");
  await open(page, "Remediation", page.getByTestId("count-pending"));
  await openItem(page, item.crn, item.hash);
  for (const name of ["Approve", "Reject", "Override the gate", "Move", "Quarantine…", "Ignore", "Revert by hash", "Stop ignoring"]) {
    assert.equal(await page.getByRole("button", { name, exact: true }).count(), 0, `no ${name} button`);
  }
  assert.equal(await page.getByRole("checkbox").count(), 0, "no bulk selection");
  assert.deepEqual(await accessibilityProblems(page), []);
  const forced = await api("POST", "/api/v1/remediation/approve", { crn: item.crn, plan_hash: item.hash }, await token("viewer"));
  assert.equal(forced.status, 403, JSON.stringify(forced.body));
  const commits = await api("GET", `/api/v1/history?type=EXECUTION_COMMIT&crn=${encodeURIComponent(item.crn)}`);
  assert.equal(commits.body.events.length, 0);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
