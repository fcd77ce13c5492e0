// node status_browser.cjs URL KEY EXPECTED_JSON [SCREENSHOT]: a person at the real Chromium opens a
// status page, signs in with KEY and waits until every text of EXPECTED_JSON is a table cell's
// whole text. Prints what it saw as one JSON object (see tests/status_support.py).
"use strict";
const { chromium } = require("playwright-core");  // from @playwright/mcp's dependencies (scripts/setup-test)

async function main() {
  const [url, key, expectedJson, screenshot] = process.argv.slice(2);
  const expected = JSON.parse(expectedJson);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run"],
  });
  const seen = { dialogs: [], errors: [] };
  try {
    const context = await browser.newContext({ viewport: { width: 1000, height: 400 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    page.on("dialog", async (dialog) => { seen.dialogs.push(dialog.message()); await dialog.dismiss(); });
    page.on("pageerror", (error) => seen.errors.push(String(error)));
    page.on("console", (message) => { if (message.type() === "error") seen.errors.push(message.text()); });
    const first = await page.goto(url);
    seen.first = { status: first.status(), forms: await page.locator("input[type=password]").count() };
    await page.fill("#key", key);
    await page.click("button[type=submit]");
    try {
      await page.waitForFunction((texts) => {
        const cells = new Set([...document.querySelectorAll("td")].map((cell) => cell.textContent));
        return texts.every((text) => cells.has(text));
      }, expected, { timeout: 20000 });
    } catch (error) {
      const shown = await page.evaluate(() => document.body.innerText);
      throw new Error(`${error.message}\nat ${page.url()}: ${shown}\nerrors: ${JSON.stringify(seen.errors)}`);
    }
    seen.url = page.url();
    seen.meters = await page.$$eval("meter", (meters) => meters.map((meter) => meter.value));
    seen.windows = await page.$$eval(".window", (rows) => rows.map((row) => row.textContent));
    seen.cells = await page.$$eval("td", (cells) => cells.map((cell) => cell.textContent));
    seen.headings = await page.$$eval("th", (cells) => cells.map((cell) => cell.textContent));
    seen.images = await page.$$eval("img", (images) => images.length);
    seen.documentCookie = await page.evaluate(() => document.cookie);
    seen.cookies = (await context.cookies()).map(({ name, value, httpOnly, sameSite, path }) =>
      ({ name, value, httpOnly, sameSite, path }));
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    seen.errorsBefore = seen.errors.length;
    seen.markupRefused = await page.evaluate(() => {  // Trusted Types: no string becomes markup
      try { document.body.insertAdjacentHTML("beforeend", "<b>x</b>"); return false; } catch (error) { return true; }
    });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(seen) + "\n");
}

main().catch((error) => { process.stderr.write(String(error && error.stack || error) + "\n"); process.exit(1); });
