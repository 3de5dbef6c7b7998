// Signing in and out, and the shell every view lives in.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { accessibilityProblems, launch, signedIn, URL_BASE } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("a wrong token is refused and the right one signs in; sign-out ends the session", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(URL_BASE + "/");
  await page.getByLabel("Access token").fill("not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
  assert.deepEqual(await accessibilityProblems(page), []);
  await context.close();

  const signed = await signedIn(browser, "admin");
  const cookies = await signed.context().cookies();
  const session = cookies.find((c) => c.name === "svc_session");
  assert.ok(session, "a session cookie is set");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.ok(!signed.url().includes("token="), "the token is taken out of the address bar");
  await signed.getByRole("button", { name: "Sign out" }).click();
  await signed.getByLabel("Access token").waitFor();
  const after = await signed.evaluate(async () => (await fetch("/api/v1/graph/stats")).status);
  assert.equal(after, 401, "the session ended on the server");
  assert.deepEqual(signed.problems.filter((p) => !p.includes("401")), []);
  await signed.context().close();
});
