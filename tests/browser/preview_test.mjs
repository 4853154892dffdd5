// A port preview in Debian's chromium, driven by puppeteer-core, against a real `isb serve` and a sandbox serving
// tests/e2e/preview_app.py: the viewer is signed in to isb in the same browser; the one-time link opens the app at
// its own origin; the app sees no isb cookie or token; the app's script cannot call isb's API with the viewer's
// credentials (cross-origin calls fail, same-origin ones reach the app, never isb); the spent link is refused.
//
// Usage: node preview_test.mjs --base http://127.0.0.1:PORT --setup-token TOKEN --link URL --node-modules DIR --out DIR
// Prints "ok NAME" per step; exits 1 on any failure.
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
for (const k of ['base', 'setup-token', 'link', 'node-modules', 'out']) {
  if (!args[k]) throw new Error('missing --' + k);
}
const puppeteer = createRequire(join(resolve(args['node-modules']), 'index.js'))('puppeteer-core');
const BASE = args.base;
const LINK = new URL(args.link);
const OUT = resolve(args.out);
mkdirSync(OUT, { recursive: true });
const STEP_MS = 20000;

function check(cond, what) {
  if (!cond) throw new Error('FAILED: ' + what);
}

// The first admin, set up through the API: the session cookie it answers with is the viewer's.
const setup = await fetch(BASE + '/api/v1/auth/setup', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' },
  body: JSON.stringify({ setup_token: args['setup-token'], user: 'viewer', password: 'a long preview password' }),
});
check(setup.status === 200, 'setup answered ' + setup.status + ': ' + (await setup.text()));
const signin = await fetch(BASE + '/api/v1/auth/signin', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' },
  body: JSON.stringify({ user: 'viewer', password: 'a long preview password' }),
});
const session = /isb_session=([^;]+)/.exec(signin.headers.get('set-cookie') || '');
check(signin.status === 200 && session, 'sign-in answered ' + signin.status + ' without an isb_session cookie');

const browser = await puppeteer.launch({
  executablePath: process.env.ISB_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
let failed = null;
try {
  const page = await browser.newPage();
  const isb = new URL(BASE);
  // Signed in to isb on both of its loopback names, as a browser that used either would be.
  // Host-only (a URL, no domain), as isb sets it.
  for (const host of [isb.hostname, 'localhost']) {
    await page.setCookie({ name: 'isb_session', value: session[1], url: 'http://' + host + ':' + isb.port + '/',
                           httpOnly: true, sameSite: 'Strict' });
  }
  const signedIn = await page.goto(BASE + '/api/v1/tools/whoami', { waitUntil: 'load' });
  check(signedIn.status() !== 401, 'the viewer is not signed in to isb: ' + signedIn.status());

  // The link: a page that sets isb_preview and refreshes to the app, at the preview's own origin.
  const opened = await page.goto(LINK.href, { waitUntil: 'load' });
  check(opened.status() === 200, 'the link answered ' + opened.status());
  check(opened.headers()['referrer-policy'] === 'no-referrer', 'the link page has no Referrer-Policy: no-referrer');
  await page.waitForFunction((origin) => location.href === origin + '/', { timeout: STEP_MS }, LINK.origin);
  const root = JSON.parse(await page.evaluate(() => document.body.innerText));
  const names = root.headers.map(([n]) => n.toLowerCase());
  const cookies = root.headers.filter(([n]) => n.toLowerCase() === 'cookie').map(([, v]) => v).join('; ');
  check(!/isb_|CF_Authorization/i.test(cookies), 'the app received isb cookies: ' + cookies);
  check(!names.includes('authorization'), 'the app received an Authorization header');
  check(!names.includes('referer'), 'the app received a Referer: ' + JSON.stringify(root.headers));
  check(!page.url().includes(LINK.pathname), 'the link is still in the address bar: ' + page.url());
  const jar = await page.cookies(LINK.origin);
  const preview = jar.find((c) => c.name === 'isb_preview');
  check(preview && preview.httpOnly && preview.sameSite === 'Strict' && preview.domain === LINK.hostname,
        'isb_preview is not host-only, HttpOnly and SameSite=Strict: ' + JSON.stringify(preview));
  check(!jar.some((c) => c.name === 'isb_session'), 'isb_session was sent to or set for the preview');
  console.log('ok app at its own origin ' + LINK.origin);

  // The app's script calls isb, at both of its names, as the viewer would.
  await page.goto(LINK.origin + '/page#isb_port=' + isb.port, { waitUntil: 'load' });
  await page.waitForFunction(() => window.results && window.results.done, { timeout: STEP_MS });
  const results = await page.evaluate(() => window.results);
  await page.screenshot({ path: join(OUT, 'preview-app.png') });
  for (const target of ['ip', 'localhost']) {
    check(results[target + '_get'] === 'refused', 'a GET from the app to isb (' + target + ') was read: ' +
          results[target + '_get']);
    check(results[target + '_post'] === 'refused', 'a POST with X-Isb-Csrf from the app to isb (' + target +
          ') was read: ' + results[target + '_post']);
  }
  check(results.same_origin_path === '/api/v1/tools/whoami', 'a same-origin call reached ' + results.same_origin_path);
  check(!/isb_/.test(results.same_origin_cookies), 'the app saw isb cookies: ' + results.same_origin_cookies);
  check(!results.document_cookie.includes('isb_preview'), 'the app\'s script reads isb_preview');
  console.log('ok app cannot call isb as the viewer');

  // The spent link, again: refused, with the reason.
  const second = await browser.newPage();
  const again = await second.goto(LINK.href, { waitUntil: 'load' });
  const text = await second.evaluate(() => document.body.innerText);
  check(again.status() === 403 && text.startsWith('this preview link was used already'),
        'the spent link answered ' + again.status() + ': ' + text);
  console.log('ok spent link refused');
} catch (e) {
  failed = e;
} finally {
  await browser.close();
}
if (failed) {
  console.log(String(failed.stack || failed));
  process.exit(1);
}
