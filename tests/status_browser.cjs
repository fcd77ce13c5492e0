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
    args: ["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebound.example 127.0.0.1", "--disable-background-networking", "--disable-component-update",
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
    if (process.env.ATTACKS) seen.attacks = await attack(context, url, key);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(seen) + "\n");
}

// Signed in, the same browser tries the page from elsewhere: under a DNS name rebound to the
// server's address, and from a page of another origin (fetch, a frame, a form with the key).
// For each: what the other page could read, and what became of its request to the server
// (the status the server answered, or why the browser stopped it).
async function attack(context, url, key) {
  const outcome = {};
  const ours = (request) => new URL(request.url()).port === new URL(url).port;
  context.on("requestfinished", async (request) => {
    if (ours(request)) outcome[request.method() + " " + request.url()] = (await request.response()).status();
  });
  context.on("requestfailed", (request) => {
    if (ours(request)) outcome[request.method() + " " + request.url()] = request.failure().errorText;
  });
  const rebound = await context.newPage();
  const result = { rebound: (await rebound.goto(url.replace("127.0.0.1", "rebound.example"))).status() };
  await rebound.close();
  const evil = await context.newPage();
  await evil.route("http://evil.example/**", (route) => route.fulfill({
    contentType: "text/html", body: "<!doctype html><title>another site</title><p>hello</p>" }));
  await evil.goto("http://evil.example/");
  const data = url + "status.json";
  result.read = await evil.evaluate(async (target) => {
    const read = async (mode) => {
      try { return await (await fetch(target, { credentials: "include", mode })).text(); } catch (error) {
        return "failed";
      }
    };
    return [await read("cors"), await read("no-cors")];
  }, data);
  const frameDone = new Promise((resolve) => {
    const done = (request) => { if (request.url() === url && request.frame() !== evil.mainFrame()) resolve(); };
    context.on("requestfinished", done);
    context.on("requestfailed", done);
  });
  await evil.evaluate((target) => {
    const frame = document.createElement("iframe");
    frame.src = target;
    document.body.append(frame);
  }, url);
  await frameDone;
  await Promise.all(evil.frames().slice(1).map((frame) => frame.waitForLoadState().catch(() => null)));
  result.framed = await Promise.all(evil.frames().slice(1).map(async (frame) => {
    try { return await frame.evaluate(() => document.body.innerText); } catch (error) { return "not readable"; }
  }));
  const submitted = evil.waitForEvent("framenavigated", { timeout: 10000 }).catch(() => null);
  await evil.evaluate(([target, secret]) => {
    const form = document.createElement("form"), field = document.createElement("input");
    form.method = "post"; form.action = target; field.name = "key"; field.value = secret;
    form.append(field); document.body.append(form); form.submit();
  }, [url, key]);
  await submitted;
  await evil.waitForLoadState();
  result.formPage = await evil.evaluate(() => document.body.innerText).catch(() => "not readable");
  result.requests = outcome;
  result.cookies = (await context.cookies()).length;
  return result;
}

main().catch((error) => { process.stderr.write(String(error && error.stack || error) + "\n"); process.exit(1); });
