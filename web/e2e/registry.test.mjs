// The registry panel against a real daemon and a real index file: a viewer
// searches and sees what the registry refuses, but installs nothing; an
// admin installs a policy pack through the page and removes it again, and
// the API shows each step.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

const PACK = join(dirname(fileURLToPath(import.meta.url)), "../../policies/cost-hygiene");
let browser;
let root;

before(async () => {
  browser = await launch();
  // An index beside the pack's files, the files named relative to it.
  root = mkdtempSync(join(tmpdir(), "svc-registry-e2e-"));
  mkdirSync(join(root, "packs"));
  const files = readdirSync(PACK)
    .sort()
    .map((name) => {
      copyFileSync(join(PACK, name), join(root, "packs", name));
      const sha256 = createHash("sha256").update(readFileSync(join(PACK, name))).digest("hex");
      return { name, url: `packs/${name}`, sha256 };
    });
  const pack = (over) => ({ type: "policy", version: "v1.0.0", author: "svc", pricing: { model: "free" }, files, ...over });
  const index = {
    packages: [
      pack({ name: "cost-hygiene", category: "cloud", description: "Storage and compute that costs money for nothing" }),
      pack({ name: "uncategorised-pack", version: "v0.1.0", description: "a pack the registry has not assigned a category" }),
    ],
  };
  writeFileSync(join(root, "index.json"), JSON.stringify(index));
  const r = await api("PUT", "/api/v1/config", { registry: { url: join(root, "index.json") } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});

after(async () => {
  await api("PUT", "/api/v1/config", { registry: { url: "" } });
  await browser?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

function packagesTable(page) {
  return page.getByRole("region", { name: "Registry" }).getByRole("table", { name: "Registry packages" });
}

test("a viewer lists the registry, sees what it refuses, and has nothing to install", async () => {
  const page = await signedIn(browser, "viewer");
  await open(page, "Settings", packagesTable(page));
  const table = packagesTable(page);
  await table.getByRole("row").filter({ hasText: "cost-hygiene" }).waitFor();
  const refused = table.getByRole("row").filter({ hasText: "uncategorised-pack" });
  await refused.getByText("unassigned", { exact: true }).waitFor();
  await refused.getByText("no category assigned by the registry", { exact: false }).waitFor();
  assert.equal(await page.getByRole("button", { name: /^Install / }).count(), 0, "no install for a viewer");
  const source = await page.getByTestId("registry-source").textContent();
  assert.ok(source.includes("index.json"), source);

  // The search narrows by description as the API does.
  await page.getByRole("searchbox", { name: "Search the registry" }).fill("costs money");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await table.getByRole("row").filter({ hasText: "uncategorised-pack" }).waitFor({ state: "detached" });
  const found = (await api("GET", "/api/v1/registry/search?q=costs%20money")).body;
  assert.deepEqual(
    found.packages.map((p) => p.name),
    ["cost-hygiene"],
  );
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems, []);
  await page.context().close();
});

test("an admin installs a policy pack from the page and removes it again", async () => {
  const page = await signedIn(browser, "admin");
  await open(page, "Settings", packagesTable(page));
  const install = page.getByRole("button", { name: "Install cost-hygiene@v1.0.0" });
  await install.click();
  await page.getByRole("region", { name: "Registry" }).getByRole("status").waitFor();
  const installed = (await api("GET", "/api/v1/registry/installed")).body;
  const pack = installed.find((p) => p.name === "cost-hygiene");
  assert.ok(pack, JSON.stringify(installed));
  assert.equal(pack.type, "policy");
  assert.equal(pack.version, "v1.0.0");
  const kept = page.getByRole("region", { name: "Registry" }).getByRole("table", { name: "Installed packages" });
  await kept.getByRole("row").filter({ hasText: "cost-hygiene" }).waitFor();
  await packagesTable(page).getByRole("row").filter({ hasText: "cost-hygiene" }).getByText("installed", { exact: true }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);

  await page.getByRole("button", { name: "Remove cost-hygiene" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
  await page.getByText("Removed cost-hygiene v1.0.0.").waitFor();
  await kept.getByRole("row").filter({ hasText: "cost-hygiene" }).waitFor({ state: "detached" });
  const left = (await api("GET", "/api/v1/registry/installed")).body;
  assert.equal(left.find((p) => p.name === "cost-hygiene"), undefined, JSON.stringify(left));
  const events = (await api("GET", "/api/v1/history?type=REGISTRY_REMOVE&limit=50")).body;
  assert.ok(JSON.stringify(events).includes("cost-hygiene"), JSON.stringify(events).slice(0, 400));
  assert.deepEqual(page.problems, []);
  await page.context().close();
});
