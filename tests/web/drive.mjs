// Opens an export --web page in headless Chromium and runs texts through it.
// usage: node drive.mjs URL TEXTS.json OUT.json [SCREENSHOT.png]
// Writes {texts: [{text, pack, result} or {text, error}], console: [...]} where
// result is what classify (or embed) gave and error what it threw. The page's own albert.js does the work.
import {readFileSync, writeFileSync} from 'node:fs';
import {launch, listen} from './browser.mjs';

const [url, textsPath, outPath, screenshot] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(textsPath, 'utf8'));
const browser = await launch();
const messages = [];
try {
  const page = await browser.newPage();
  listen(page, messages);
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === 'true' ||
                             document.body.dataset.error, {timeout: 120000});
  const results = await page.evaluate(async texts => {
    const model = window.albertModel;
    const out = [];
    for (const text of texts) {
      try {
        const pack = model.pack ? model.pack(text) : null;  // MediaPipe packs itself
        const result = model.config.kind === 'classifier' ?
            await model.classify(text) : {embedding: Array.from(await model.embed(text))};
        if (model.corpus) result.hits = await model.search(text);
        for (const key of ['logits', 'probabilities']) {
          if (result[key]) result[key] = Array.from(result[key]);
        }
        out.push({text, pack, result});
      } catch (e) {  // what the page says of a text it refuses
        out.push({text, error: e.message});
      }
    }
    return out;
  }, texts);
  if (screenshot) await page.screenshot({path: screenshot, fullPage: true});
  writeFileSync(outPath, JSON.stringify({texts: results, console: messages}));
} catch (e) {
  writeFileSync(outPath, JSON.stringify({error: String(e), console: messages}));
  process.exitCode = 1;
} finally {
  await browser.close();
}
