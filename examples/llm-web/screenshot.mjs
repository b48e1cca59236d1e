// The page's screenshot for the docs: opens the served page (`cargo run -p island-llm-web`) in
// headless Chromium through Playwright, waits for the run to finish, prints what the page shows
// and writes a PNG. Not part of the build or the tests:
//   npm install playwright-core@1 && node examples/llm-web/screenshot.mjs URL OUT.png
import { chromium } from "playwright-core";
const url = process.argv[2], out = process.argv[3];
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--disable-gpu-sandbox",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1100, height: 1000 } });
page.on("console", (m) => console.log("console:", m.text().slice(0, 300)));
const t0 = Date.now();
await page.goto(url);
await page.waitForFunction(() => /Done|Stopped/.test(document.getElementById("status").textContent), null, { timeout: 900000 });
console.log("status:", await page.textContent("#status"), "after", (Date.now() - t0) / 1000, "s");
console.log("speed:", await page.textContent("#speed"));
console.log("adapter:", await page.textContent("#adapter"));
console.log("out:", await page.textContent("#out"));
const rows = await page.$$eval("#steps tbody tr", (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent).join("\t")));
console.log(rows.join("\n"));
await page.screenshot({ path: out, fullPage: true });
await browser.close();
