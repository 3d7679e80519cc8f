// Opens a page that runs transformers.js in headless Chromium and calls its
// window.run(texts, options) once the page says it is ready.
// usage: node drive_transformers.mjs URL INPUT.json OUT.json
// INPUT.json: {texts, options}; writes {results, console} or {error, console}.
import {readFileSync, writeFileSync} from 'node:fs';
import {launch, listen} from './browser.mjs';

const [url, inputPath, outPath] = process.argv.slice(2);
const input = JSON.parse(readFileSync(inputPath, 'utf8'));
const browser = await launch();
const messages = [];
try {
  const page = await browser.newPage();
  listen(page, messages);
  page.on('requestfailed', r => messages.push(`requestfailed: ${r.url()}`));
  await page.goto(url);
  await page.waitForFunction(() => window.run !== undefined, {timeout: 60000});
  const results = await page.evaluate(async ({texts, options}) => window.run(texts, options),
                                      input);
  writeFileSync(outPath, JSON.stringify({results, console: messages}));
} catch (e) {
  writeFileSync(outPath, JSON.stringify({error: String(e), console: messages}));
  process.exitCode = 1;
} finally {
  await browser.close();
}
