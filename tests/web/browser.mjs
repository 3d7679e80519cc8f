// Launches Debian's Chromium for the browser tests (never a browser a tool
// downloads), headless, with nothing reaching out on its own.
import puppeteer from 'puppeteer-core';

export function launch() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Collects a page's console messages ("type: text") and uncaught errors.
export function listen(page, messages) {
  page.on('console', m => messages.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', e => messages.push(`pageerror: ${e.message}`));
}
