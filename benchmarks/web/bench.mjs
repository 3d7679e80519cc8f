// Times a page's window.bench.classify(text) in headless Chromium.
// usage: node bench.mjs URL TEXTS.json OUT.json
// The page sets window.bench = {ready: Promise, classify: async text => label}.
// Writes {load_ms, warmup, ms: [per text], labels, bytes: {path: size}}.
import {readFileSync, writeFileSync} from 'node:fs';
import puppeteer from 'puppeteer-core';

const [url, textsPath, outPath] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(textsPath, 'utf8'));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const bytes = {};
const messages = [];
try {
  const page = await browser.newPage();
  page.on('console', m => messages.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', e => messages.push(`pageerror: ${e.message}`));
  // each file's size as the server sent it (a streamed body, such as the
  // wasm or the model, cannot be read back here)
  page.on('response', r => {
    const size = Number(r.headers()['content-length']);
    if (size) bytes[new URL(r.url()).pathname] = size;
  });
  const started = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.bench !== undefined, {timeout: 300000});
  await page.evaluate(() => window.bench.ready);
  const loadMs = Date.now() - started;
  const result = await page.evaluate(async texts => {
    for (const text of texts.slice(0, 10)) await window.bench.classify(text);  // warm-up
    const ms = [], labels = [];
    for (const text of texts) {
      const t0 = performance.now();
      labels.push(await window.bench.classify(text));
      ms.push(performance.now() - t0);
    }
    return {ms, labels};
  }, texts);
  writeFileSync(outPath, JSON.stringify({load_ms: loadMs, ...result, bytes, console: messages}));
} catch (e) {
  writeFileSync(outPath, JSON.stringify({error: String(e), console: messages}));
  process.exitCode = 1;
} finally {
  await browser.close();
}
