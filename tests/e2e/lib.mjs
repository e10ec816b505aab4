// What the browser end-to-end scripts (browser.mjs, sso.mjs) share: Playwright (playwright-core) driving the system
// Chromium, screenshots into tests/e2e/artifacts/, axe-core checks, console-error capture and the run/report wrapper.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const ARTIFACTS = join(here, "artifacts");

/** The step running now: the report names it when something fails. */
export const progress = { step: "start" };
const consoleErrors = [];
const accessibility = {};

export function log(msg) {
  console.log(`[e2e] ${msg}`);
}

async function loadChromium() {
  try {
    return (await import("playwright-core")).chromium;
  } catch {
    // not installed next to this script: fall back to the frontend's dependencies
    const require = createRequire(join(here, "../../frontend/package.json"));
    return require("playwright-core").chromium;
  }
}

/** Fails when the page is wider than the window, i.e. the reader would have to scroll sideways. */
export async function assertNoSidewaysScroll(page, name) {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  if (scrollWidth > innerWidth) throw new Error(`${name}: the page scrolls sideways (scrollWidth ${scrollWidth} > innerWidth ${innerWidth})`);
}

let axeSource;

/** Runs axe-core (WCAG 2 A and AA rules) on the page; fails on any serious or critical violation. */
export async function assertAccessible(page, name) {
  if (!axeSource) {
    const require = createRequire(import.meta.url);
    axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  }
  // evaluated through the DevTools protocol, not as an inline <script>, so the app's Content-Security-Policy stays on
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  accessibility[name] = violations;
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  log(`accessibility ${name}: ${violations.length} violation(s), ${bad.length} serious or critical`);
  if (bad.length) throw new Error(`${name}: accessibility violations: ${bad.map((v) => `${v.id} (${v.impact}: ${v.help}) at ${v.targets.join(", ")}`).join("; ")}`);
}

/** A full-page screenshot as artifacts/<name>.png; fails when the page scrolls sideways. */
export async function shot(page, name) {
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  log(`screenshot ${path}`);
  await assertNoSidewaysScroll(page, name);
}

/**
 * Runs `run(page)` in a fresh headless Chromium page (1280x800); returns the exit code: 1 when a step fails (then a
 * screenshot `<failureShot>.png`) or the page logged a console error or threw. Writes artifacts/<resultFile>.
 */
export async function runInChromium({ baseUrl, run, resultFile = "result.json", failureShot = "failure" }) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const chromium = await loadChromium();
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: process.env.HEADED !== "1",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-quic",
      "--no-first-run",
      "--disable-sync",
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on("console", (msg) => {
    if (msg.type() === "error") consoleErrors.push(`${msg.text()} (${msg.location().url ?? ""})`);
  });
  page.on("pageerror", (err) => consoleErrors.push(`uncaught: ${err.message}`));
  let code = 0;
  try {
    await run(page);
    log("all steps passed");
  } catch (err) {
    console.error(`[e2e] FAILED at step "${progress.step}": ${err instanceof Error ? err.message : err}`);
    await shot(page, failureShot).catch(() => undefined);
    code = 1;
  } finally {
    await browser.close();
  }
  if (consoleErrors.length) {
    console.error(`[e2e] ${consoleErrors.length} console error(s):\n  ${consoleErrors.join("\n  ")}`);
    code = code || 1;
  }
  const result = { ok: code === 0, step: progress.step, consoleErrors, accessibility, base_url: baseUrl };
  writeFileSync(join(ARTIFACTS, resultFile), JSON.stringify(result, null, 2));
  return code;
}
