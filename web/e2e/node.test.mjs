// A resource's page: what it shows is what the API says of that resource;
// only operators may ignore it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, signedIn, steady, URL_BASE } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const count = (n) => n.toLocaleString("en-US");
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const exactly = (s) => new RegExp(`^${escape(s)}$`);
const path = (crn) => encodeURIComponent(crn);
const nodeHash = (crn) => `#/node/${encodeURIComponent(crn)}`;

async function get(p) {
  const r = await api("GET", p);
  assert.equal(r.status, 200, `${p}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A node of the first page with edges, not waste and outside the remediation pipeline. */
let subject;
async function pickSubject() {
  if (subject) return subject;
  const page = await get("/api/v1/graph/nodes?limit=200");
  for (const n of page.nodes) {
    if (n.is_waste || n.phase) continue;
    const d = await get(`/api/v1/graph/nodes/${path(n.crn)}`);
    if (d.edges_out + d.edges_in > 0) {
      subject = d;
      return d;
    }
  }
  throw new Error("no node with edges among the first 200");
}

test("a node's page shows its properties, edges, blast radius, proof, ledger and versions", async () => {
  await steady(async (attempt) => {
    if (attempt > 1) subject = undefined;
    const node = await pickSubject();
    const [edges, blast, oracle, versions, history, drift] = await Promise.all([
      get(`/api/v1/graph/nodes/${path(node.crn)}/edges?limit=200`),
      get(`/api/v1/graph/blast-radius/${path(node.crn)}?limit=200`),
      get(`/api/v1/oracle/${path(node.crn)}`),
      get(`/api/v1/graph/nodes/${path(node.crn)}/versions?limit=100`),
      get(`/api/v1/history/resource?crn=${path(node.crn)}&limit=50`),
      get(`/api/v1/drift/report?crn=${path(node.crn)}`),
    ]);
    const page = await signedIn(browser, "viewer");
    try {
      await page.goto(`${URL_BASE}/${nodeHash(node.crn)}`);
      await page.locator(".node-crn").filter({ hasText: exactly(node.crn) }).waitFor();

      // Properties: every key with its value.
      const props = page.getByTestId("node-properties");
      await props.waitFor();
      for (const [k, v] of Object.entries(node.properties)) {
        const row = props.locator("tr").filter({ has: page.getByRole("rowheader", { name: k, exact: true }) });
        assert.equal(await row.locator("td").innerText(), typeof v === "string" ? v : JSON.stringify(v), `property ${k}`);
      }
      for (const [k, v] of Object.entries(node.tags)) {
        await page.getByRole("link", { name: `${k}=${v}`, exact: true }).waitFor();
      }

      // Edges: the API's totals, and one link per listed edge.
      await page.getByTestId("edges-total").filter({ hasText: exactly(count(edges.outgoing_total + edges.incoming_total)) }).waitFor();
      assert.equal(await page.getByTestId("node-edges-out").innerText(), count(node.edges_out));
      const edgeRows = page.getByRole("region", { name: "Edges", exact: true }).locator("tbody tr");
      assert.equal(await edgeRows.count(), edges.outgoing.length + edges.incoming.length);
      const neighbour = edges.outgoing[0]?.target_crn ?? edges.incoming[0]?.source_crn;
      assert.equal(await page.getByRole("region", { name: "Edges", exact: true }).locator(`a[title="${neighbour}"]`).first().getAttribute("href"), nodeHash(neighbour));

      // Blast radius and the reachability proof.
      await page.getByTestId("blast-count").filter({ hasText: exactly(count(blast.affected_count)) }).waitFor();
      assert.equal(await page.getByRole("region", { name: "Blast radius", exact: true }).locator("tbody tr").count(), blast.affected.length);
      await page.getByTestId("oracle-reachability").filter({ hasText: exactly(oracle.reachability) }).waitFor();
      // Terraform: what the drift report says of it (no state is configured here).
      assert.equal(drift.configured, false);
      await page.getByTestId("terraform-status").filter({ hasText: /No Terraform state is configured/ }).waitFor();
      if (oracle.proof.length > 0) {
        const steps = page.getByTestId("oracle-proof").locator("li");
        assert.equal(await steps.count(), oracle.proof.length);
        assert.equal(await steps.first().locator("a").first().getAttribute("title"), oracle.proof[0].from);
      }

      // Ledger events.
      const ledger = page.getByRole("region", { name: "Ledger events", exact: true });
      if (history.total === 0) await ledger.getByText("The ledger has no event about this resource.").waitFor();
      else assert.equal(await ledger.locator("tbody tr").count(), history.events.length);

      // Versions: the timeline, then two instants compared.
      assert.ok(versions.total >= 1 && versions.versions.length >= 1, "a node has at least one version");
      await page.getByTestId("versions-total").filter({ hasText: exactly(count(versions.total)) }).waitFor();
      assert.equal(await page.getByTestId("versions-timeline").locator("li").count(), versions.versions.length);
      const newest = versions.versions[0];
      const rfc = (seconds) => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
      const newestText = rfc(Math.floor(newest.valid_from / 1e6));
      assert.ok((await page.getByTestId("versions-timeline").locator("li").first().innerText()).includes(newestText), "times read as RFC 3339");
      const diff = page.getByTestId("version-diff");
      if (versions.versions.length >= 2) await diff.getByText(/^From v\d+ to v\d+:/).waitFor();
      else await diff.getByText("Pick two different versions").waitFor();
      await page.getByLabel("Or as of (UTC)").fill("2000-01-01T00:00:00Z");
      await page.getByLabel("and as of (UTC)").fill(new Date().toISOString());
      await page.getByRole("button", { name: "Compare instants" }).click();
      await page.getByRole("alert").filter({ hasText: "No stored version was valid at 2000-01-01T00:00:00Z" }).waitFor();
      // The second after the newest version began, typed without a zone (read as UTC).
      await page.getByLabel("Or as of (UTC)").fill(rfc(Math.floor(newest.valid_from / 1e6) + 1).replace("T", " ").replace("Z", ""));
      await page.getByRole("button", { name: "Compare instants" }).click();
      await page.getByRole("alert").filter({ hasText: "No stored version" }).waitFor({ state: "detached" });
      await diff.getByText("Pick two different versions").waitFor();

      assert.equal(await page.getByRole("button", { name: "Ignore…" }).count(), 0, "a viewer is offered no Ignore");
      assert.deepEqual(await accessibilityProblems(page), []);
      assert.deepEqual(page.problems, []);
    } finally {
      await page.context().close();
    }
  });
});

test("an unknown CRN shows the API's 404 message", async () => {
  const crn = "crn:svc:aws:us-east-1:ec2:volume:000000000000:vol-00000000000000000";
  const r = await api("GET", `/api/v1/graph/nodes/${path(crn)}`);
  assert.equal(r.status, 404);
  const page = await signedIn(browser, "viewer");
  await page.goto(`${URL_BASE}/${nodeHash(crn)}`);
  await page.getByRole("alert").filter({ hasText: r.body.error.message }).waitFor();
  assert.ok((await page.getByRole("alert").innerText()).includes("404"));
  assert.deepEqual(await accessibilityProblems(page), []);
  assert.deepEqual(page.problems.filter((p) => !p.includes("404")), []);
  await page.context().close();
});

test("an operator ignores a resource for a while", async () => {
  const node = await pickSubject();
  const page = await signedIn(browser, "operator");
  await page.goto(`${URL_BASE}/${nodeHash(node.crn)}`);
  await page.getByTestId("edges-total").waitFor();
  try {
    await page.getByRole("button", { name: "Ignore…" }).click();
    const dialog = page.getByRole("dialog", { name: "Ignore this resource" });
    await dialog.getByLabel("Reason").fill("e2e: kept on purpose");
    await dialog.getByLabel(/For how long/).fill("seven days");
    await dialog.getByRole("button", { name: "Ignore", exact: true }).click();
    await dialog.getByRole("alert").filter({ hasText: "is not a duration" }).waitFor();
    assert.deepEqual(await accessibilityProblems(page), []);
    await dialog.getByLabel(/For how long/).fill("7d");
    await dialog.getByRole("button", { name: "Ignore", exact: true }).click();
    await page.getByRole("status").filter({ hasText: /^Ignored until / }).waitFor();
    await page.getByTestId("node-ignored").waitFor();
    const list = await get("/api/v1/isolation");
    const entry = list.entries.find((e) => e.crn === node.crn);
    assert.ok(entry, "the API lists the ignore entry");
    assert.equal(entry.ttl_seconds, 7 * 86400);
    assert.equal(entry.reason_code, "e2e: kept on purpose");
    assert.deepEqual(page.problems, []);
  } finally {
    await api("DELETE", `/api/v1/isolation/${path(node.crn)}`);
    await page.context().close();
  }
});
