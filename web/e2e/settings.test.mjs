// Settings against a real daemon: a viewer reads the configuration and the
// plugins but changes nothing; an admin edits the configuration (a 422
// names the bad key), switches a plugin and manages tokens.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("a viewer sees the configuration read only, the plugins' state, and no toggle", async () => {
  const config = (await api("GET", "/api/v1/config")).body;
  const plugins = (await api("GET", "/api/v1/plugins")).body;
  const page = await signedIn(browser, "viewer");
  await open(page, "Settings", page.getByTestId("config-view"));
  assert.deepEqual(JSON.parse(await page.getByTestId("config-view").textContent()), config);
  await page.getByText("your role (viewer) cannot change the configuration").waitFor();
  assert.equal(await page.getByRole("textbox").count(), 0, "no editor");
  assert.equal(await page.getByRole("button", { name: "Save" }).count(), 0);
  assert.equal(await page.getByRole("switch").count(), 0, "no plugin toggle");
  const table = page.getByRole("region", { name: "Plugins" }).getByRole("table");
  for (const p of plugins) {
    const row = table.getByRole("row").filter({ hasText: `(${p.name})` });
    await row.getByText(p.status, { exact: true }).waitFor();
    await row.getByText(p.active ? "active" : "inactive", { exact: true }).waitFor();
  }
  const who = await page.getByTestId("signed-in").textContent();
  assert.ok(who.includes("viewer"), who);
  assert.equal(await page.getByRole("region", { name: "Access tokens" }).count(), 0, "no tokens panel for a viewer");
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("an admin switches a plugin and the API reflects it, then switches it back", async () => {
  const plugins = (await api("GET", "/api/v1/plugins")).body;
  assert.ok(plugins.length > 0, "the test daemon has a plugin installed (tests/e2e_dashboard.rs installs one)");
  const p = plugins[0];
  const page = await signedIn(browser, "admin");
  const toggle = page.getByRole("switch", { name: `${p.display_name} active` });
  await open(page, "Settings", toggle);
  assert.equal(await toggle.isChecked(), p.active);
  assert.deepEqual(await accessibilityProblems(page), []);

  await toggle.click();
  await page.locator(`[data-plugin="${p.name}"]${p.active ? ":not(:checked)" : ":checked"}`).waitFor();
  const flipped = (await api("GET", "/api/v1/plugins")).body.find((x) => x.name === p.name);
  assert.equal(flipped.active, !p.active);

  await toggle.click();
  await page.locator(`[data-plugin="${p.name}"]${p.active ? ":checked" : ":not(:checked)"}`).waitFor();
  const back = (await api("GET", "/api/v1/plugins")).body.find((x) => x.name === p.name);
  assert.equal(back.active, p.active);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("an admin edits the configuration: bad JSON is caught, a 422 names the key, a change is sent alone", async () => {
  const before = (await api("GET", "/api/v1/config")).body;
  const interval = before.daemon?.scan_interval ?? "1h";
  const page = await signedIn(browser, "admin");
  const editor = page.getByLabel("Configuration (JSON)");
  await open(page, "Settings", editor);
  assert.deepEqual(JSON.parse(await editor.inputValue()), before);
  const save = page.getByRole("button", { name: "Save" });
  assert.equal(await save.isDisabled(), true, "nothing to save yet");

  await editor.fill("{ not json");
  await page.getByText(/^not valid JSON/).waitFor();
  assert.equal(await save.isDisabled(), true);

  const bad = structuredClone(before);
  bad.daemon = { ...(bad.daemon ?? {}), no_such_key: 3 };
  await editor.fill(JSON.stringify(bad, null, 2));
  await page.getByText("1 change to send: daemon.no_such_key.").waitFor();
  await save.click();
  await page.getByRole("alert").filter({ hasText: "no_such_key" }).waitFor();
  assert.deepEqual((await api("GET", "/api/v1/config")).body, before, "nothing applied");

  const good = structuredClone(before);
  good.daemon = { ...(good.daemon ?? {}), scan_interval: interval === "2h" ? "3h" : "2h" };
  await editor.fill(JSON.stringify(good, null, 2));
  await page.getByText("1 change to send: daemon.scan_interval.").waitFor();
  await save.click();
  await page.getByRole("status").filter({ hasText: "Saved: daemon.scan_interval." }).waitFor();
  assert.equal((await api("GET", "/api/v1/config")).body.daemon.scan_interval, good.daemon.scan_interval);

  const restored = await api("PUT", "/api/v1/config", { daemon: { scan_interval: before.daemon?.scan_interval ?? null } });
  assert.equal(restored.status, 200, JSON.stringify(restored.body));
  assert.deepEqual(page.problems.filter((p) => !p.includes("422")), []);
  await page.context().close();
});

test("an admin creates a token, sees it once, and revokes it", async () => {
  const name = `e2e-settings-${process.pid}`;
  const page = await signedIn(browser, "admin");
  const panel = page.getByRole("region", { name: "Access tokens" });
  await open(page, "Settings", panel.getByLabel("New token's name"));
  const session = await page.evaluate(async () => (await fetch("/api/v1/session")).json());
  const who = await page.getByTestId("signed-in").textContent();
  assert.ok(who.includes(session.name) && who.includes(session.role), who);

  await panel.getByLabel("New token's name").fill(name);
  await panel.getByLabel("Role").selectOption("viewer");
  await panel.getByRole("button", { name: "Create token" }).click();
  await panel.getByText("it is shown only once").waitFor();
  const secret = await panel.getByLabel("Token", { exact: true }).inputValue();
  assert.ok(secret.length > 0);
  const listed = (await api("GET", "/api/v1/tokens")).body;
  const list = Array.isArray(listed) ? listed : listed.tokens;
  assert.ok(list.some((t) => t.name === name && t.role === "viewer"), JSON.stringify(listed));
  assert.equal((await api("GET", "/api/v1/graph/stats", undefined, secret)).status, 200, "the new token works");
  assert.deepEqual(await accessibilityProblems(page), []);

  await panel.getByRole("button", { name: "Done" }).click();
  await panel.getByRole("button", { name: `Revoke ${name}` }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
  await panel.getByRole("button", { name: `Revoke ${name}` }).waitFor({ state: "detached" });
  assert.equal((await api("GET", "/api/v1/graph/stats", undefined, secret)).status, 401, "the revoked token no longer works");
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
