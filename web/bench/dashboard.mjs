// The dashboard's figures for PERF.md, against a running daemon (the 1M
// estate: `svc daemon --mock --mock-scale 1000000`, release build):
//
//   SVC_URL=http://127.0.0.1:8080 SVC_ADMIN_TOKEN=$(cat $SVC_DATA_DIR/token) node bench/dashboard.mjs
//
// Prints one JSON document: the bundle's size gzipped (as the daemon
// serves it), the time to a usable Overview and Explorer after navigation
// (the browser's performance timeline: milliseconds since the navigation
// started), the time to turn an Explorer page, the Graph view's first
// frame, and frames per second while panning it. Each timing is the median
// of RUNS runs (default 7), with the runs themselves.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { launch, signedIn, URL_BASE } from "../e2e/harness.mjs";
import { pan } from "../e2e/graph-pan.mjs";

const RUNS = Number(process.env.RUNS ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x) => Math.round(x * 10) / 10;
const summary = (xs) => ({ median: round(median(xs)), runs: xs.map(round) });

function bundle() {
  const dist = new URL("../dist/", import.meta.url).pathname;
  const files = ["index.html", ...readdirSync(join(dist, "assets")).map((f) => join("assets", f))];
  let plain = 0;
  let gzipped = 0;
  for (const f of files) {
    const bytes = readFileSync(join(dist, f));
    plain += bytes.length;
    gzipped += gzipSync(bytes, { level: 9 }).length;
  }
  return { files: files.length, bytes: plain, gzip_bytes: gzipped };
}

/** Loads `hash` afresh and returns ms from navigation start to `ready`. */
async function load(page, hash, ready) {
  await page.goto("about:blank");
  await page.goto(`${URL_BASE}/${hash}`);
  await ready(page);
  return page.evaluate(() => performance.now());
}

const overviewReady = async (page) => {
  await page.getByTestId("kpi-cost").filter({ hasText: "$" }).waitFor({ timeout: 60_000 });
  await page.getByTestId("kpi-nodes").filter({ hasText: /\d/ }).waitFor({ timeout: 60_000 });
  for (const by of ["provider", "account", "region", "type"]) {
    await page.getByTestId(`breakdown-${by}`).locator("g.chart-row").first().waitFor({ timeout: 60_000 });
  }
};

const explorerReady = async (page) => {
  await page.getByTestId("explorer-total").filter({ hasText: /\d/ }).waitFor({ timeout: 60_000 });
  await page.locator('.explorer-table[aria-busy="false"] tbody tr').first().waitFor({ timeout: 60_000 });
};

/** ms to turn to the next page of the Explorer, as the driver sees it. */
async function turnPage(page) {
  const range = page.getByTestId("explorer-range");
  const before = await range.textContent();
  const t0 = performance.now();
  await page.getByRole("button", { name: "Next page" }).first().click();
  await page.waitForFunction(
    (b) => {
      const r = document.querySelector('[data-testid="explorer-range"]');
      return r && r.textContent !== b && document.querySelector('.explorer-table[aria-busy="false"]');
    },
    before,
    { timeout: 60_000 },
  );
  return performance.now() - t0;
}

const browser = await launch();
try {
  const page = await signedIn(browser, "admin");
  const overview = [];
  for (let i = 0; i < RUNS; i++) overview.push(await load(page, "#/overview", overviewReady));
  const explorer = [];
  for (let i = 0; i < RUNS; i++) explorer.push(await load(page, "#/explorer", explorerReady));
  const turns = [];
  for (let i = 0; i < RUNS; i++) turns.push(await turnPage(page));
  const filtered = [];
  for (let i = 0; i < RUNS; i++) {
    filtered.push(await load(page, "#/explorer?provider=aws&waste=true", explorerReady));
  }
  const firstFrame = [];
  const fps = [];
  for (let i = 0; i < Math.min(RUNS, 3); i++) {
    firstFrame.push(await load(page, "#/graph", (p) => p.locator(".graph-canvas[data-frames]").waitFor({ timeout: 120_000 })));
    for (let j = 0; j < 3; j++) fps.push(1000 / (await pan(page, 120)).median);
  }
  const counts = await page.locator(".graph-counts").textContent();
  console.log(
    JSON.stringify(
      {
        url: URL_BASE,
        at: new Date().toISOString(),
        bundle: bundle(),
        overview_usable_ms: summary(overview),
        explorer_usable_ms: summary(explorer),
        explorer_next_page_ms: summary(turns),
        explorer_filtered_usable_ms: summary(filtered),
        graph_first_frame_ms: summary(firstFrame),
        graph_pan_fps: summary(fps),
        graph_counts: counts?.trim(),
      },
      null,
      2,
    ),
  );
} finally {
  await browser.close();
}
