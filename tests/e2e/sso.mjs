// Single sign-on in the browser: the kbqa web app, signing in through a real OpenID Connect provider (Dex).
//
//   BASE_URL=http://127.0.0.1:8000 DEX_ISSUER=http://127.0.0.1:5556/dex SSO_EMAIL=<Dex password user> \
//   SSO_PASSWORD=<its password> SSO_WHO="<name> · <role> · <tenant>" node tests/e2e/sso.mjs
//
// Opens the app, clicks "Sign in with SSO", picks the password connector on Dex's own login page, logs in there and
// must land back in the app signed in (the header reads SSO_WHO: the role and tenant kbqa mapped), on the chat page;
// signs out (the session is gone server-side). Then opens the provider's callback address of that sign-in again (a
// replayed callback): the app's login page must explain that the sign-in did not complete, with a "Try again" link and
// no raw error. With GROUP_WHO (and VISIBLE_DOCS, HIDDEN_DOCS: comma-separated titles), "Try again" signs in through
// Dex's mockCallback connector, whose user is in a group kbqa maps to a role and ACL groups: the header must read
// GROUP_WHO and the Documents page list the VISIBLE_DOCS and none of the HIDDEN_DOCS. Screenshots sso-*.png and
// sso-result.json go to tests/e2e/artifacts/. Exits non-zero on any failed step, console error or page error.
// Optional env: CHROMIUM (default /usr/bin/chromium), HEADED=1.
import { join } from "node:path";
import { ARTIFACTS, assertAccessible, log, progress, runInChromium, shot } from "./lib.mjs";

const BASE_URL = (process.env.BASE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const DEX_ISSUER = (process.env.DEX_ISSUER ?? "").replace(/\/$/, "");
const { SSO_EMAIL, SSO_PASSWORD, SSO_WHO, GROUP_WHO } = process.env;
const list = (v) => (v ?? "").split(",").map((s) => s.trim()).filter(Boolean);
const VISIBLE_DOCS = list(process.env.VISIBLE_DOCS);
const HIDDEN_DOCS = list(process.env.HIDDEN_DOCS);
const CALLBACK = `${BASE_URL}/api/v1/auth/oidc/callback`;

const atDex = (url) => url.href.startsWith(`${DEX_ISSUER}/`);

/** Waits for the app's main navigation after a sign-in and checks who the header says is signed in. */
async function signedInAs(page, who) {
  const nav = page.getByRole("navigation", { name: "Main" });
  await nav.waitFor();
  if (!page.url().startsWith(`${BASE_URL}/`)) throw new Error(`signed in, but at ${page.url()}`);
  const header = ((await page.locator(".who").textContent()) ?? "").trim();
  if (header !== who) throw new Error(`signed in as "${header}", expected "${who}"`);
  log(`signed in through SSO as ${header}`);
  return nav;
}

async function signOut(page) {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("button", { name: "Sign in with SSO" }).waitFor();
  const me = await page.request.get(`${BASE_URL}/api/v1/auth/me`, { headers: { Accept: "application/json" } });
  if (me.status() !== 401) throw new Error(`after signing out, /auth/me answers ${me.status()}`);
}

async function run(page) {
  progress.step = "login page";
  await page.goto(`${BASE_URL}/`, { waitUntil: "networkidle" });
  const ssoButton = page.getByRole("button", { name: "Sign in with SSO" });
  await ssoButton.waitFor();
  await shot(page, "sso-01-login");
  await assertAccessible(page, "login with SSO");

  progress.step = "sign in at Dex";
  const callbacks = [];
  page.on("request", (r) => {
    if (r.url().startsWith(`${CALLBACK}?`)) callbacks.push(r.url());
  });
  await ssoButton.click();
  await page.waitForURL(atDex);
  // Dex's login page lists its connectors; the static password users are behind "Log in with Email".
  await page.getByRole("button", { name: "Log in with Email" }).click();
  await page.locator("#login").fill(SSO_EMAIL);
  await page.locator("#password").fill(SSO_PASSWORD);
  await page.screenshot({ path: join(ARTIFACTS, "sso-02-dex-login.png"), fullPage: true }); // Dex's page, as it is
  await page.locator("#submit-login").click();

  progress.step = "back in the app, signed in";
  await signedInAs(page, SSO_WHO);
  await page.getByLabel("Question").waitFor(); // the chat page
  await shot(page, "sso-03-signed-in");

  progress.step = "sign out";
  await signOut(page);

  progress.step = "replayed callback";
  if (callbacks.length !== 1) throw new Error(`expected one callback from Dex, saw ${callbacks.length}`);
  await page.goto(callbacks[0]);
  await page.getByRole("heading", { name: "Single sign-on did not complete" }).waitFor();
  const said = ((await page.getByRole("alert").first().textContent()) ?? "").trim();
  if (!said.includes("no longer valid")) throw new Error(`unexpected explanation: ${said}`);
  if (page.url() !== `${BASE_URL}/`) throw new Error(`the failure reason stays in the address: ${page.url()}`);
  if (await page.getByRole("navigation", { name: "Main" }).count()) throw new Error("signed in by a replayed callback");
  if ((await page.locator("body").innerText()).trim().startsWith("{")) throw new Error("the page shows raw JSON");
  const retry = page.getByRole("link", { name: "Try again" });
  await retry.waitFor();
  await shot(page, "sso-04-failed");
  await assertAccessible(page, "failed single sign-on");
  log(`replayed callback: ${said}`);

  if (!GROUP_WHO) return;
  progress.step = "try again through the group connector";
  await retry.click();
  await page.waitForURL(atDex);
  await page.getByRole("button", { name: "Log in with Mock" }).click(); // signs its user in at once
  await signedInAs(page, GROUP_WHO);

  progress.step = "group -> ACL mapping on the documents";
  await page.getByRole("button", { name: "Documents", exact: true }).click();
  for (const title of VISIBLE_DOCS) await page.getByRole("cell", { name: title }).first().waitFor();
  for (const title of HIDDEN_DOCS) {
    if (await page.getByRole("cell", { name: title }).count()) throw new Error(`${title} is listed to a user outside its group`);
  }
  await shot(page, "sso-05-group-documents");
  log(`documents listed through the mapped ACL groups: ${VISIBLE_DOCS.join(", ")}; hidden: ${HIDDEN_DOCS.join(", ")}`);
  await signOut(page);
}

if (!DEX_ISSUER || !SSO_EMAIL || !SSO_PASSWORD || !SSO_WHO) {
  console.error("[e2e] set BASE_URL, DEX_ISSUER, SSO_EMAIL, SSO_PASSWORD and SSO_WHO");
  process.exit(2);
}
process.exit(await runInChromium({ baseUrl: BASE_URL, run, resultFile: "sso-result.json", failureShot: "sso-failure" }));
