// Terraform: with a state configured through the API, the view shows the
// drift report's totals and lists as the API answers them; without one it
// says how to configure it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { accessibilityProblems, api, launch, open, signedIn } from "./harness.mjs";

let browser;
let dir;
before(async () => {
  browser = await launch();
  dir = mkdtempSync(join(tmpdir(), "svc-e2e-tf-"));
});
after(async () => {
  // Leave the daemon as the other tests expect it: no Terraform.
  await api("PUT", "/api/v1/config", { iac: null });
  rmSync(dir, { recursive: true, force: true });
  await browser?.close();
});

const count = (n) => n.toLocaleString("en-US");

test("the Terraform view says how to configure it, then shows the API's drift", async () => {
  let r = await api("PUT", "/api/v1/config", { iac: null });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const page = await signedIn(browser, "viewer");
  await open(page, "Terraform", page.getByTestId("tf-unconfigured"));

  // A state declaring one volume as Terraform recorded it (its size since
  // changed by hand) and one that is gone.
  const nodes = await api("GET", "/api/v1/graph/nodes?provider=aws&limit=500");
  assert.equal(nodes.status, 200);
  const volume = nodes.body.nodes.find((n) => n.type === "ec2:volume" && n.valid_to === 0 && Number.isInteger(n.properties.size_gib));
  assert.ok(volume, "an AWS volume with a size");
  const arn = (id) => `arn:aws:ec2:${volume.region}:${volume.account}:volume/${id}`;
  const state = {
    version: 4,
    terraform_version: "1.9.5",
    serial: 12,
    lineage: "e2e",
    resources: [
      {
        module: "module.disks",
        mode: "managed",
        type: "aws_ebs_volume",
        name: "data",
        each: "list",
        instances: [{ index_key: 0, attributes: { id: volume.physical_id, arn: arn(volume.physical_id), size: volume.properties.size_gib + 1 } }],
      },
      { mode: "managed", type: "aws_ebs_volume", name: "old", instances: [{ attributes: { id: "vol-0e2e000000000dead", arn: arn("vol-0e2e000000000dead") } }] },
    ],
  };
  const path = join(dir, "e2e.tfstate");
  writeFileSync(path, JSON.stringify(state));
  r = await api("PUT", "/api/v1/config", { iac: { terraform_states: [path] } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const report = await api("GET", "/api/v1/drift/report?limit=100");
  assert.equal(report.status, 200);
  const d = report.body;
  assert.equal(d.totals.changed, 1, JSON.stringify(d.totals));
  assert.equal(d.totals.gone, 1, JSON.stringify(d.totals));

  await page.reload();
  await page.getByTestId("tf-declared").waitFor();
  for (const key of ["declared", "in_sync", "changed", "gone", "unmanaged", "outside_scans", "unmapped"]) {
    assert.equal(await page.getByTestId(`tf-${key}`).innerText(), count(d.totals[key]), key);
  }
  const changed = page.getByRole("table", { name: "Resources whose live attributes differ from the state" });
  await changed.getByText("module.disks.aws_ebs_volume.data[0]", { exact: true }).waitFor();
  await changed.getByText(`size: ${volume.properties.size_gib + 1} → ${volume.properties.size_gib}`, { exact: true }).waitFor();
  const gone = page.getByRole("table", { name: "Declared resources gone from the estate" });
  await gone.getByText("aws_ebs_volume.old", { exact: true }).waitFor();
  const unmanaged = page.getByRole("table", { name: "Live resources no state declares" });
  assert.equal(await unmanaged.locator("tbody tr").count(), d.unmanaged.length);
  assert.deepEqual(await accessibilityProblems(page), []);
  await page.close();
});
