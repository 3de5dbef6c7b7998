// Shared by the end-to-end tests: Debian's Chromium driven by playwright-core
// against a real daemon started by tests/e2e_dashboard.rs, which passes
//   SVC_URL          the daemon's base URL (http://127.0.0.1:PORT)
//   SVC_ADMIN_TOKEN  the token of $SVC_DATA_DIR/token (role admin)
// Tokens of the other roles are made through the API (`tokens()`).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

export const URL_BASE = process.env.SVC_URL ?? "";
export const ADMIN_TOKEN = process.env.SVC_ADMIN_TOKEN ?? "";
if (!URL_BASE || !ADMIN_TOKEN) {
  throw new Error("SVC_URL and SVC_ADMIN_TOKEN must be set (tests/e2e_dashboard.rs sets them)");
}
const CHROMIUM = process.env.SVC_CHROMIUM ?? "/usr/bin/chromium";

/** The API as an admin, from Node (for setting up and for checking). */
export async function api(method, path, body, token = ADMIN_TOKEN) {
  const res = await fetch(URL_BASE + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

const made = new Map();
/** A token of `role`, made once per run through `POST /api/v1/tokens`. */
export async function token(role) {
  if (role === "admin") return ADMIN_TOKEN;
  if (made.has(role)) return made.get(role);
  const name = `e2e-${role}-${process.pid}`;
  const r = await api("POST", "/api/v1/tokens", { name, role });
  if (r.status !== 201) throw new Error(`cannot make a ${role} token: ${r.status} ${JSON.stringify(r.body)}`);
  made.set(role, r.body.token);
  return r.body.token;
}

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu-sandbox",
      "--use-angle=swiftshader",
      "--enable-unsafe-swiftshader",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A page signed in with a token of `role`, through the link the daemon
 * prints (`/#token=...`). Page errors and failed API calls are collected
 * in `page.problems` for the test to assert on.
 */
export async function signedIn(browser, role = "admin", viewport = { width: 1440, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") page.problems.push(`console error: ${m.text()}`);
  });
  await page.goto(`${URL_BASE}/#token=${await token(role)}`);
  await page.getByRole("navigation", { name: "Views" }).waitFor();
  return page;
}

/** Opens a view by its navigation link and waits for `ready` to show. */
export async function open(page, linkName, ready) {
  await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: linkName, exact: true }).click();
  await ready.waitFor({ timeout: 30_000 });
}

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's serious and critical violations on the page as it is now. */
export async function accessibilityProblems(page) {
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** The sequence numbers of the sources' last committed scans. */
export async function scanSeq() {
  const s = await api("GET", "/api/v1/graph/stats");
  return (s.body?.sources ?? []).map((x) => x.last_scan?.scan_seq ?? 0).join(",");
}

/**
 * Runs `body`, and again (three times at most) when it failed while a scan
 * committed: the daemon rescans the mock estate on its own, which moves the
 * figures read from the API under the page. A failure with no scan in
 * between is a failure.
 */
export async function steady(body) {
  for (let attempt = 1; ; attempt++) {
    const before = await scanSeq();
    try {
      return await body(attempt);
    } catch (e) {
      if (attempt >= 3 || (await scanSeq()) === before) throw e;
    }
  }
}
