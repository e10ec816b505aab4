// Browser end-to-end check of the kbqa web app, driven by Playwright (playwright-core) in the system Chromium.
//
//   BASE_URL=http://127.0.0.1:8000 EMAIL=<user> PASSWORD=<password> node tests/e2e/browser.mjs
//   BASE_URL=http://127.0.0.1:8000 API_KEY=<editor-or-admin key> node tests/e2e/browser.mjs
//
// Signs in (with EMAIL and PASSWORD when both are set, otherwise with API_KEY; the account needs the editor or admin
// role), uploads a small Markdown file, waits until it is indexed, asks a question about it, opens a citation, gives
// feedback; uploads a troubleshooting guide and asks a how-to question, whose answer must quote the section's five
// steps as a numbered list under the section's title, and opens "Show whole section" (screenshot answer-steps.png); uploads a two-page PDF, asks about its second page and opens
// the citation, which must draw page 2 with pdf.js and highlight the cited lines (screenshot cited-pdf-page.png); as an admin, checks the Admin page (users, audit log with the upload). Runs axe-core (WCAG 2.1 A/AA) on
// the login, chat, portal and admin screens and fails on serious or critical findings; asks and opens a citation
// with the keyboard alone. Then checks that chat and the
// upload portal (and Admin) fit 1366x768 and 1024x768 without sideways scrolling. With OTHER_EMAIL and
// OTHER_PASSWORD (a user of another tenant) it signs in again as that user, who must see neither the conversation
// nor the document. Screenshots go to tests/e2e/artifacts/. Exits non-zero on any failed step and on any console
// error or uncaught page error. Optional env: CHROMIUM (default /usr/bin/chromium), INDEX_TIMEOUT_MS (default
// 180000), ANSWER_TIMEOUT_MS (default 120000), HEADED=1.
import { join } from "node:path";
import { ARTIFACTS, assertAccessible, log, progress, runInChromium, shot } from "./lib.mjs";

const BASE_URL = (process.env.BASE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const API_KEY = process.env.API_KEY;
const EMAIL = process.env.EMAIL;
const PASSWORD = process.env.PASSWORD;
const OTHER_EMAIL = process.env.OTHER_EMAIL;
const OTHER_PASSWORD = process.env.OTHER_PASSWORD;
const VIEWPORTS = [
  { width: 1366, height: 768 },
  { width: 1024, height: 768 },
];
const INDEX_TIMEOUT_MS = Number(process.env.INDEX_TIMEOUT_MS ?? 180_000);
const ANSWER_TIMEOUT_MS = Number(process.env.ANSWER_TIMEOUT_MS ?? 120_000);
const RUN_ID = Date.now().toString(36);
const FILENAME = `e2e-zephyr-${RUN_ID}.md`;
const DOCUMENT = `# Zephyr Widget Maintenance

## Calibration

The Zephyr widget must be calibrated every 42 days using the blue calibration key.
Calibration takes about seven minutes and must be done at room temperature.

## Cleaning

Clean the Zephyr widget's intake grille with a dry brush once a week. (run ${RUN_ID})
`;
const QUESTION = "How often must the Zephyr widget be calibrated?";
// A how-to question whose answer is a section's numbered steps, quoted whole.
const STEPS_FILENAME = `e2e-kestrel-${RUN_ID}.md`;
const STEPS_SECTION = "A device shows as offline";
const STEPS = [
  "Check that the camera's status light is on and its power adapter is plugged in.",
  "Make sure the Wi-Fi router is on and other devices can reach the internet.",
  "Move the camera within 10 metres of the router, or add a Wi-Fi extender.",
  "Restart the camera by unplugging it for ten seconds.",
  "If it still shows as offline, remove the camera in the Kestrel Home app and add it again.",
];
const STEPS_DOCUMENT = `# Troubleshooting Guide

## ${STEPS_SECTION}

If a Kestrel camera shows as offline in the Kestrel Home app, check these in order:

${STEPS.map((s, i) => `${i + 1}. ${s}`).join("\n")}

## Motion alerts arrive late

Motion alerts can take up to a minute when the phone is in battery saver mode. Allow the Kestrel Home app to run in
the background.
`;
const STEPS_QUESTION = "My Kestrel camera keeps going offline. What should I check?";

// A two-page PDF whose second page holds the fact asked about: the citation must open page 2 with it highlighted.
const PDF_FILENAME = `e2e-quillfeather-${RUN_ID}.pdf`;
const PDF_FACT = [
  "Frost protection switches the Quillfeather heating on whenever the room",
  "falls below five degrees Celsius, even while the schedule is paused.",
];
const PDF_PAGES = [
  [
    { size: 18, text: "Unpacking the Quillfeather thermostat" },
    { size: 11, text: "The box holds the Quillfeather thermostat, a wall plate, two screws and a" },
    { size: 11, text: "quick start card. Keep the card: it carries the pairing code of the thermostat." },
    { size: 11, text: "Charge the thermostat for one hour before you mount it on the wall plate." },
  ],
  [
    { size: 18, text: "Frost protection" },
    { size: 11, text: PDF_FACT[0] },
    { size: 11, text: PDF_FACT[1] },
    { size: 11, text: `Frost protection cannot be switched off in the app. (run ${RUN_ID})` },
  ],
];
const PDF_QUESTION = "When does Quillfeather frost protection switch the heating on?";

/** A minimal PDF (Helvetica, one text line per entry) built by hand, so the test needs no PDF library. */
function makePdf(pages) {
  const objects = [];
  const add = (body) => objects.push(body);
  add(""); // 1: catalog, filled in below
  add(""); // 2: page tree
  add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"); // 3
  const kids = [];
  for (const lines of pages) {
    let y = 740;
    let stream = "";
    for (const { size, text } of lines) {
      stream += `BT /F1 ${size} Tf 1 0 0 1 56 ${y} Tm (${text.replace(/[\\()]/g, (c) => `\\${c}`)}) Tj ET\n`;
      y -= Math.round(size * 1.7);
    }
    const content = add(`<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}endstream`);
    kids.push(add(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objects[0] = "<< /Type /Catalog /Pages 2 0 R >>";
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`;
  let out = "%PDF-1.4\n";
  const offsets = objects.map((body, i) => {
    const at = Buffer.byteLength(out, "latin1");
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return at;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

/** Uploads the PDF, asks about its second page and opens the citation: the panel draws page 2 with pdf.js and
 * highlights the passage's text-layer spans; enlarged, it is screenshotted as cited-pdf-page.png. */
async function citedPdfPage(page) {
  progress.step = "cited PDF page";
  await page.getByRole("button", { name: "Documents", exact: true }).click();
  await page.locator("#file-input").setInputFiles({ name: PDF_FILENAME, mimeType: "application/pdf", buffer: makePdf(PDF_PAGES) });
  const item = page.getByRole("listitem", { name: PDF_FILENAME });
  const status = item.locator(".upload-head .status");
  await status.filter({ hasText: /^(indexed|failed)$/ }).waitFor({ timeout: INDEX_TIMEOUT_MS });
  if ((await status.textContent())?.trim() !== "indexed") throw new Error(`${PDF_FILENAME} did not index: ${await item.textContent()}`);
  await page.getByRole("button", { name: "Chat", exact: true }).click();
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Question").fill(PDF_QUESTION);
  await page.getByLabel("Question").press("Enter");
  const turn = page.locator("article.turn").first();
  await page.locator('article.turn[aria-busy="false"]').first().waitFor({ timeout: ANSWER_TIMEOUT_MS });
  const title = PDF_FILENAME.replace(/\.pdf$/, "");
  const chip = turn.getByRole("button", { name: new RegExp(`^Citation \\d+: .*(${title}|Quillfeather)`, "i") }).first();
  if ((await chip.count()) === 0) throw new Error(`the answer does not cite ${PDF_FILENAME}: ${await turn.textContent()}`);
  await chip.click();
  const panel = page.getByRole("complementary", { name: "Cited passage" });
  const caption = panel.locator(".pdf-view figcaption");
  await caption.waitFor({ timeout: 30_000 });
  const said = (await caption.textContent()) ?? "";
  if (!said.startsWith("Page 2 of 2")) throw new Error(`the citation did not open page 2: ${said}`);
  const marked = panel.locator(".pdf-page .textLayer span.cited");
  if ((await marked.count()) === 0) throw new Error(`no text-layer span of page 2 is highlighted (${said})`);
  const highlighted = (await marked.allTextContents()).join(" ");
  if (!/below five degrees/.test(highlighted)) throw new Error(`the highlight misses the cited fact: ${highlighted}`);
  const painted = await panel.locator(".pdf-page canvas").evaluate((c) => {
    const { data } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
    for (let i = 0; i < data.length; i += 4) if (data[i] < 128 && data[i + 3] > 0) return true; // a dark pixel: text
    return false;
  });
  if (!painted) throw new Error("pdf.js drew nothing on the page canvas");
  await shot(page, "cited-pdf-panel");
  await panel.getByRole("button", { name: "Enlarge" }).click();
  const dialog = page.getByRole("dialog", { name: "Cited passage in the original" });
  await dialog.locator(".pdf-page .textLayer span.cited").first().waitFor({ timeout: 30_000 });
  await dialog.locator(".pdf-view figcaption").waitFor();
  await page.screenshot({ path: join(ARTIFACTS, "cited-pdf-page.png") });
  log(`screenshot ${join(ARTIFACTS, "cited-pdf-page.png")}`);
  await assertAccessible(page, "cited PDF page");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "detached", timeout: 5_000 });
  log(`cited PDF page: ${said.trim()}; highlighted: ${highlighted.slice(0, 160)}`);
}

/** Presses Tab until ``locator`` has the focus (keyboard-only use); fails after ``max`` presses. */
async function tabTo(page, locator, what, max = 80) {
  for (let i = 0; i < max; i++) {
    if (await locator.evaluate((el) => el === document.activeElement).catch(() => false)) return i;
    await page.keyboard.press("Tab");
  }
  throw new Error(`${what} cannot be reached with the Tab key (${max} presses)`);
}

/** Signs in with email and password when given, else with the API key; returns the main navigation. */
async function signIn(page, credentials, screenshot) {
  if (credentials.email) {
    await page.getByLabel("Email", { exact: true }).fill(credentials.email);
    await page.getByLabel("Password", { exact: true }).fill(credentials.password);
  } else {
    await page.getByRole("button", { name: "Sign in with an API key" }).click();
    await page.getByLabel("API key").fill(credentials.apiKey);
  }
  if (screenshot) {
    await shot(page, screenshot);
    await assertAccessible(page, "login");
  }
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  const nav = page.getByRole("navigation", { name: "Main" });
  await nav.or(page.getByRole("alert")).first().waitFor();
  if (!(await nav.isVisible())) throw new Error(`sign-in refused: ${await page.getByRole("alert").first().textContent()}`);
  return nav;
}

async function run(page) {
  progress.step = "login";
  await page.goto(BASE_URL + "/", { waitUntil: "networkidle" });
  const usePassword = Boolean(EMAIL && PASSWORD);
  await signIn(page, usePassword ? { email: EMAIL, password: PASSWORD } : { apiKey: API_KEY }, "01-login");
  log(`signed in with ${usePassword ? `email ${EMAIL}` : "an API key"} as ${await page.locator(".who").textContent()}`);

  progress.step = "upload";
  const documentsTab = page.getByRole("button", { name: "Documents", exact: true });
  if ((await documentsTab.count()) === 0) throw new Error("the Documents page is missing: the account needs the editor or admin role");
  await documentsTab.click();
  await page.locator("#file-input").setInputFiles({ name: FILENAME, mimeType: "text/markdown", buffer: Buffer.from(DOCUMENT) });
  const item = page.getByRole("listitem", { name: FILENAME });
  await item.waitFor();

  progress.step = "wait for indexed";
  const status = item.locator(".upload-head .status");
  await status.filter({ hasText: /^(indexed|failed)$/ }).waitFor({ timeout: INDEX_TIMEOUT_MS });
  const final = (await status.textContent())?.trim();
  await shot(page, "02-uploaded");
  if (final !== "indexed") throw new Error(`document ended ${final}: ${await item.textContent()}`);
  log(`${FILENAME} indexed`);

  progress.step = "ask";
  await page.getByRole("button", { name: "Chat", exact: true }).click();
  const before = await page.locator("article.turn").count();
  await page.getByLabel("Question").fill(QUESTION);
  await page.getByLabel("Question").press("Enter");
  // The new turn's article is aria-busy while the answer streams.
  const turn = page.locator("article.turn").nth(before);
  await page.locator('article.turn[aria-busy="false"]').nth(before).waitFor({ timeout: ANSWER_TIMEOUT_MS });
  const answer = (await turn.locator(".answer-text").textContent())?.trim() ?? "";
  await shot(page, "03-answer");
  const failure = turn.locator(".banner-error");
  if (await failure.count()) throw new Error(`answer failed: ${await failure.textContent()}`);
  if (!answer) throw new Error("empty answer");
  log(`answer: ${answer.slice(0, 200)}`);
  if (!/42/.test(answer)) log("warning: the answer does not mention 42 days");

  progress.step = "open citation";
  const chip = turn.getByRole("button", { name: /^Citation \d+/ }).first();
  if ((await chip.count()) === 0) throw new Error("the answer has no citation chip");
  await chip.click();
  const panel = page.getByRole("complementary", { name: "Cited passage" });
  // the passage in its section (mark.cited), or the bare passage when the section cannot be shown
  const cited = panel.locator("mark.cited, blockquote.passage").first();
  await cited.waitFor({ timeout: 15_000 });
  const passage = (await cited.textContent()) ?? "";
  if (!passage.trim()) throw new Error("the cited passage is empty");
  await shot(page, "04-citation");
  await assertAccessible(page, "chat with a cited passage");
  await panel.getByRole("button", { name: "Close cited passage" }).click();

  progress.step = "feedback";
  await turn.getByRole("button", { name: "Helpful", exact: true }).click();
  await turn.getByLabel("Comment (optional)").fill(`browser e2e ${RUN_ID}`);
  await turn.getByRole("button", { name: "Send feedback" }).click();
  await turn.getByText("Thanks for the feedback.").waitFor({ timeout: 10_000 });
  await shot(page, "05-feedback");

  progress.step = "documents list";
  await page.getByRole("button", { name: "Documents", exact: true }).click();
  await page.getByLabel("Search").fill("Zephyr");
  await page.getByRole("cell", { name: /Zephyr/ }).first().waitFor({ timeout: 10_000 });
  await shot(page, "06-documents");
  await assertAccessible(page, "upload portal");

  const adminTab = page.getByRole("button", { name: "Admin", exact: true });
  if (await adminTab.count()) {
    progress.step = "admin";
    await adminTab.click();
    for (const heading of ["Users and roles", "API keys", "Usage", "Audit log"]) {
      await page.getByRole("heading", { name: heading, exact: true }).waitFor();
    }
    progress.step = "audit log shows the upload";
    await page.getByLabel("Action", { exact: true }).selectOption("document.");
    const uploadRow = page.getByRole("row").filter({ has: page.getByText("document.upload", { exact: true }) });
    await uploadRow.first().waitFor({ timeout: 10_000 });
    const mentionsFile = await uploadRow.filter({ hasText: FILENAME }).count();
    log(`audit log: ${await uploadRow.count()} document.upload row(s)${mentionsFile ? `, one naming ${FILENAME}` : ""}`);
    await page.getByLabel("Action", { exact: true }).selectOption("");
    await page.getByRole("region", { name: "Audit events" }).getByText("document.upload", { exact: true }).first().waitFor();
    await shot(page, "07-admin");
    await assertAccessible(page, "admin");
  }

  progress.step = "keyboard only";
  // Ask and open a citation without the mouse: Tab to the question, type, Enter; Tab to a chip, Enter; Escape.
  await page.getByRole("button", { name: "Chat", exact: true }).click();
  await page.locator("body").focus();
  await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
  const question = page.getByLabel("Question");
  const tabs = await tabTo(page, question, "the question box");
  const turnsBefore = await page.locator("article.turn").count();
  await page.keyboard.type("What must be used to calibrate the Zephyr widget?");
  await page.keyboard.press("Enter");
  await page.locator('article.turn[aria-busy="false"]').nth(turnsBefore).waitFor({ timeout: ANSWER_TIMEOUT_MS });
  const keyboardTurn = page.locator("article.turn").nth(turnsBefore);
  const keyboardChip = keyboardTurn.getByRole("button", { name: /^Citation \d+/ }).first();
  if (await keyboardChip.count()) {
    await tabTo(page, keyboardChip, "a citation chip", 120);
    await page.keyboard.press("Enter");
    const cited = page.getByRole("complementary", { name: "Cited passage" });
    await cited.locator("mark.cited, blockquote.passage").first().waitFor({ timeout: 15_000 });
    await page.keyboard.press("Escape");
    await cited.waitFor({ state: "detached", timeout: 5_000 });
    // the app hands the focus back in a timeout after the panel closes: wait for it briefly, not check once
    const back = await page
      .waitForFunction((el) => el === document.activeElement, await keyboardChip.elementHandle(), { timeout: 2_000 })
      .then(() => true, () => false);
    if (!back) throw new Error("closing the cited passage with Escape did not return the focus to its chip");
    log(`keyboard only: question reached in ${tabs} Tab presses; citation opened with Enter and closed with Escape`);
  } else {
    throw new Error("the keyboard-asked answer has no citation chip");
  }

  progress.step = "numbered steps";
  // Upload a guide, ask a how-to question in a new conversation: the answer quotes the section's steps as a numbered
  // list under the section's title; "Show whole section" reveals the section's passages.
  await page.getByRole("button", { name: "Documents", exact: true }).click();
  await page.locator("#file-input").setInputFiles({ name: STEPS_FILENAME, mimeType: "text/markdown", buffer: Buffer.from(STEPS_DOCUMENT) });
  const guide = page.getByRole("listitem", { name: STEPS_FILENAME });
  const guideStatus = guide.locator(".upload-head .status");
  await guideStatus.filter({ hasText: /^(indexed|failed)$/ }).waitFor({ timeout: INDEX_TIMEOUT_MS });
  if ((await guideStatus.textContent())?.trim() !== "indexed") throw new Error(`${STEPS_FILENAME} did not index: ${await guide.textContent()}`);
  await page.getByRole("button", { name: "Chat", exact: true }).click();
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Question").fill(STEPS_QUESTION);
  await page.getByLabel("Question").press("Enter");
  const stepsTurn = page.locator("article.turn").first();
  // the outcome label appears once the done event has arrived
  await page.locator('article.turn[aria-busy="false"]').first().waitFor({ timeout: ANSWER_TIMEOUT_MS });
  if (await stepsTurn.locator(".banner-error").count()) throw new Error(`answer failed: ${await stepsTurn.locator(".banner-error").textContent()}`);
  const outcome = (await stepsTurn.locator(".outcome-badge").textContent({ timeout: 5_000 }))?.trim();
  log(`steps answer outcome: ${outcome}; answer: ${((await stepsTurn.locator(".answer-text").textContent()) ?? "").slice(0, 300)}`);
  if (outcome !== "Answered" && outcome !== "Partial answer") throw new Error(`the how-to question was not answered (${outcome})`);
  const excerpt = stepsTurn.getByRole("figure", { name: new RegExp(`^From .*${STEPS_SECTION}$`) });
  await excerpt.waitFor({ timeout: 5_000 });
  const caption = (await excerpt.locator("figcaption").textContent()) ?? "";
  if (!caption.includes(STEPS_SECTION)) throw new Error(`the quote is not titled with its section: ${caption}`);
  const items = (await excerpt.locator("blockquote ol > li").allTextContents()).map((t) => t.replace(/\s*\[\d+\]/g, "").trim());
  if (JSON.stringify(items) !== JSON.stringify(STEPS)) throw new Error(`the steps are not quoted whole and in order as a numbered list: ${JSON.stringify(items)}`);
  const whole = stepsTurn.getByRole("button", { name: "Show whole section" });
  if ((await whole.getAttribute("aria-expanded")) !== "false") throw new Error("Show whole section starts expanded");
  await whole.click();
  const toggle = stepsTurn.getByRole("button", { name: "Hide whole section" });
  if ((await toggle.getAttribute("aria-expanded")) !== "true") throw new Error("Show whole section did not expand");
  const region = stepsTurn.getByRole("region", { name: /^Whole section: / });
  await region.waitFor();
  const regionText = (await region.textContent()) ?? "";
  if (!regionText.includes(STEPS[4])) throw new Error(`the whole section lacks the last step: ${regionText.slice(0, 300)}`);
  await shot(page, "answer-steps");
  await assertAccessible(page, "chat with an excerpt answer");
  log(`numbered steps: ${items.length} steps quoted under "${caption.trim()}"; the whole section shown`);

  if (await adminTab.count()) {
    progress.step = "review loop";
    // A thumbs-down puts the answer in the review queue; the reviewer marks the answering section, the regression
    // run replays it, and the knowledge-gaps report lists the question.
    await stepsTurn.getByRole("button", { name: "Not helpful", exact: true }).click();
    await stepsTurn.getByLabel("Comment (optional)").fill(`review loop ${RUN_ID}`);
    await stepsTurn.getByRole("button", { name: "Send feedback" }).click();
    await stepsTurn.getByText("Thanks for the feedback.").waitFor({ timeout: 10_000 });
    await page.getByRole("button", { name: "Review", exact: true }).click();
    await page.getByRole("region", { name: "Review items" }).getByRole("button", { name: STEPS_QUESTION }).first().click();
    const reviewItem = page.getByRole("article", { name: "Review item" });
    await reviewItem.getByText(`review loop ${RUN_ID}`).waitFor({ timeout: 10_000 });
    await reviewItem.getByRole("button", { name: "Search", exact: true }).click();
    await reviewItem.getByRole("button", { name: "Mark this section" }).first().click({ timeout: 15_000 });
    await reviewItem.getByRole("button", { name: "Save review" }).click();
    await reviewItem.getByText("Saved.").waitFor({ timeout: 10_000 });
    await page.getByRole("button", { name: "Run regression" }).click();
    const results = page.getByRole("region", { name: "Regression results" });
    await results.getByText(STEPS_QUESTION).first().waitFor({ timeout: ANSWER_TIMEOUT_MS });
    const summary = (await page.getByRole("status").filter({ hasText: /passed/ }).first().textContent()) ?? "";
    const gaps = page.getByRole("region", { name: "Knowledge gap topics" });
    await gaps.getByText(STEPS_QUESTION).first().waitFor({ timeout: 15_000 });
    await shot(page, "08-review");
    await assertAccessible(page, "review queue, regression run and knowledge gaps");
    log(`review loop: ${summary.trim()}; the question is listed in the knowledge gaps`);
  }

  await citedPdfPage(page);

  for (const viewport of VIEWPORTS) {
    progress.step = `layout at ${viewport.width}x${viewport.height}`;
    await page.setViewportSize(viewport);
    await page.getByRole("button", { name: "Chat", exact: true }).click();
    // reopen the conversation and its citation: the widest chat layout
    await page.getByRole("navigation", { name: "Conversations" }).getByRole("button", { name: QUESTION }).first().click();
    const reopened = page.locator("article.turn").last();
    await reopened.locator(".answer-text").waitFor();
    const cite = reopened.getByRole("button", { name: /^Citation \d+/ }).first();
    if (await cite.count()) {
      await cite.click();
      await page.getByRole("complementary", { name: "Cited passage" }).locator("mark.cited, blockquote.passage").first().waitFor({ timeout: 15_000 });
    }
    await shot(page, `chat-${viewport.width}`);
    await page.getByRole("button", { name: "Documents", exact: true }).click();
    await page.getByRole("cell", { name: /Zephyr/ }).first().waitFor(); // the document list has loaded
    await shot(page, `portal-${viewport.width}`);
    if (await adminTab.count()) {
      await adminTab.click();
      await page.getByRole("region", { name: "Audit events" }).getByText("document.upload", { exact: true }).first().waitFor();
      await shot(page, `admin-${viewport.width}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });

  if (OTHER_EMAIL && OTHER_PASSWORD) {
    progress.step = "other tenant";
    await page.getByRole("button", { name: "Sign out" }).click();
    // the login form, not a form of the page being left (the admin page has its own Email field), gets the credentials
    await page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
    const listed = page.waitForResponse((r) => r.url().endsWith("/api/v1/conversations") && r.request().method() === "GET");
    await signIn(page, { email: OTHER_EMAIL, password: OTHER_PASSWORD });
    const conversations = page.getByRole("navigation", { name: "Conversations" });
    await conversations.waitFor();
    await listed;
    await page.waitForTimeout(100); // let the list render
    if (await conversations.getByRole("button", { name: QUESTION }).count()) throw new Error("the other tenant sees the first tenant's conversation");
    const documentsTab = page.getByRole("button", { name: "Documents", exact: true });
    if (await documentsTab.count()) {
      const firstList = page.waitForResponse((r) => r.url().includes("/api/v1/documents?"));
      await documentsTab.click();
      await firstList; // the portal's first list load: a search typed before it lands can be reset by it
      const searched = page.waitForResponse((r) => r.url().includes("/api/v1/documents?") && r.url().includes("q=Zephyr"));
      await page.getByLabel("Search").fill("Zephyr");
      await searched;
      await page.waitForTimeout(100); // let the table render
      if (await page.getByRole("cell", { name: /Zephyr/ }).count()) throw new Error("the other tenant sees the first tenant's document");
      await page.getByRole("button", { name: "Chat", exact: true }).click();
    }
    await page.getByLabel("Question").fill(QUESTION);
    await page.getByLabel("Question").press("Enter");
    const otherTurn = page.locator("article.turn").first();
    await page.locator('article.turn[aria-busy="false"]').first().waitFor({ timeout: ANSWER_TIMEOUT_MS });
    const otherAnswer = (await otherTurn.textContent()) ?? "";
    await shot(page, "08-other-tenant");
    if (otherAnswer.includes(RUN_ID)) throw new Error("the other tenant's answer quotes the first tenant's document");
    if (await otherTurn.getByRole("button", { name: /Zephyr Widget Maintenance/ }).count()) throw new Error("the other tenant's answer cites the first tenant's document");
    log(`other tenant's answer: ${otherAnswer.slice(0, 200)}`);
  }
}

async function main() {
  if (!API_KEY && !(EMAIL && PASSWORD)) {
    console.error("[e2e] set EMAIL and PASSWORD (an editor or admin user), or API_KEY (an editor or admin key), and BASE_URL");
    return 2;
  }
  return runInChromium({ baseUrl: BASE_URL, run });
}

process.exit(await main());
