// isb's web UI in Debian's chromium, driven by puppeteer-core, against a real `isb serve`: first-run setup from the
// fragment link, sign-in, a sandbox created in the form, its terminal (echo $((6*7)) reads 42 off the screen, and a
// reload attaches to the same shell), an upload seen by `ls`, the egress list edited, a sandbox made through the API
// appearing in a second tab without a reload, an image pulled, inspected and removed in the Images page, every page
// visited (and at 390 px), a cross-origin page that cannot change anything, sign-out. Every page must log no console
// error and no CSP violation. Screenshots go to OUT.
//
// Usage: node ui_test.mjs --base http://127.0.0.1:PORT --setup-token TOKEN --node-modules DIR --out DIR
//            --image-ref REGISTRY/test/busybox:1 --image-digest sha256:... (an image the daemon may pull)
// Prints "ok NAME" per step, "first_load_ms=N" and "csp_violations=0 console_errors=0"; exits 1 on any failure.
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
for (const k of ['base', 'setup-token', 'node-modules', 'out', 'image-ref', 'image-digest']) {
  if (!args[k]) throw new Error('missing --' + k);
}
const puppeteer = createRequire(join(resolve(args['node-modules']), 'index.js'))('puppeteer-core');
const BASE = args.base;
const OUT = resolve(args.out);
mkdirSync(OUT, { recursive: true });
rmSync(join(OUT, 'failure.png'), { force: true });
const USER = 'admin';
const PASSWORD = 'a long browser password';
const STEP_MS = 20000;

function check(cond, what) {
  if (!cond) throw new Error('FAILED: ' + what);
}

// What every page reported: console errors (console.error, uncaught exceptions, failed loads) and CSP violations.
const problems = { console: [], csp: [] };
// Refusals a step asks for on purpose: chromium logs each response of 400 and above as a console error, which is
// not one of the UI's. Each entry excuses one such message, naming its status and URL exactly.
const expectedRefusals = [];
function refusalExpected(text, url) {
  const i = expectedRefusals.findIndex((r) => url === r.url &&
    text === 'Failed to load resource: the server responded with a status of ' + r.status);
  if (i < 0) return false;
  expectedRefusals.splice(i, 1);
  return true;
}

async function watch(page, name) {
  await page.exposeFunction('__isbCsp', (text) => problems.csp.push(name + ': ' + text));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__isbCsp(e.violatedDirective + ' blocked ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber));
    // The page's open event streams and WebSockets, counted as the page makes and closes them.
    const open = { es: 0, ws: 0 };
    window.__isbOpen = open;
    const ES = window.EventSource;
    window.EventSource = class extends ES {
      constructor(...a) {
        super(...a);
        open.es++;
        this.__counted = true;
        this.addEventListener('error', () => { if (this.readyState === ES.CLOSED) this.__uncount(); });
      }
      __uncount() { if (this.__counted) { this.__counted = false; open.es--; } }
      close() { this.__uncount(); super.close(); }
    };
    const WS = window.WebSocket;
    window.WebSocket = class extends WS {
      constructor(...a) {
        super(...a);
        open.ws++;
        this.__counted = true;
        this.addEventListener('close', () => this.__uncount());
      }
      __uncount() { if (this.__counted) { this.__counted = false; open.ws--; } }
      close(...a) { this.__uncount(); super.close(...a); }
    };
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = (m.location() && m.location().url) || '';
    if (refusalExpected(m.text().replace(/ \(.*\)$/, ''), url)) return;
    problems.console.push(name + ': ' + m.text() + ' ' + url);
  });
  page.on('pageerror', (e) => problems.console.push(name + ': uncaught ' + e.message));
}

async function shot(page, name) {
  await page.screenshot({ path: join(OUT, name + '.png'), fullPage: true });
}

async function api(cookie, tool, input) {
  const r = await fetch(BASE + '/api/v1/tools/' + tool, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1', Cookie: cookie },
    body: JSON.stringify(input),
  });
  return { status: r.status, body: await r.json() };
}

// The terminal's screen as lines of text (xterm's DOM renderer).
async function screenLines(page) {
  return page.$$eval('.xterm-rows > div', (rows) => rows.map((r) => r.textContent.replace(/\u00a0/g, ' ').trimEnd()));
}

async function waitForScreen(page, predicate, what) {
  const until = Date.now() + STEP_MS;
  let lines = [];
  while (Date.now() < until) {
    lines = await screenLines(page);
    if (predicate(lines)) return lines;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('FAILED: the terminal never showed ' + what + '; it shows:\n' + lines.join('\n'));
}

async function typeInTerminal(page, text) {
  await page.focus('.xterm-helper-textarea');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

// Polled every 100 ms rather than on animation frames, which a tab in the background does not have.
async function waitText(page, selector, text) {
  await page.waitForFunction((s, t) => [...document.querySelectorAll(s)].some((e) => e.textContent.includes(t)),
                             { timeout: STEP_MS, polling: 100 }, selector, text);
}

// Each [path, screenshot, selector shown when ready] at 390 px wide, where it must fit; then back to 1280x800.
async function atPhoneWidth(page, pages) {
  await page.setViewport({ width: 390, height: 844 });
  for (const [path, name, ready] of pages) {
    await page.goto(BASE + '/' + path);
    await page.waitForSelector(ready, { timeout: STEP_MS });
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 390, name + ' fits 390 px (it is ' + width + ' px wide)');
    await shot(page, name);
  }
  await page.setViewport({ width: 1280, height: 800 });
}

// How many of the page's controls have no label.
function unlabelledControls(page) {
  return page.$$eval('input, select, textarea', (els) => els.filter((e) =>
    !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && e.type !== 'hidden').length);
}

// dom.ts's bytes(), for the sizes the Images page shows.
function sizeText(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? String(n) : n.toFixed(1)) + ' ' + units[i];
}

const cellTexts = (page, selector) => page.$$eval(selector, (els) => els.map((e) => e.textContent));

// Images: the test's image pulled in the form from the test's registry (the progress seen), listed, offered by the
// create form, inspected, its removal cancelled, refused while a sandbox is made from it, then removed; a pull that
// fails shows the tool's message. At 1280x800 and 390 px.
async function imagesStep(page, cookie) {
  const ref = args['image-ref'];
  const digest = args['image-digest'];
  const registry = ref.slice(0, ref.indexOf('/'));
  const pullForm = 'form[aria-label="Pull an image"]';
  await page.goto(BASE + '/#/images');
  await page.waitForSelector(pullForm, { timeout: STEP_MS });
  await waitText(page, 'main p.muted', 'No images in this org.');
  check(await page.$eval('header nav a[aria-current="page"]', (a) => a.textContent) === 'Images',
        'the navigation marks Images');
  const unlabelled = await unlabelledControls(page);
  check(unlabelled === 0, unlabelled + ' controls of the Images page have no label');

  await page.type('input[name=ref]', registry + '/test/busybox:missing');
  await page.click(pullForm + ' button[type=submit]');
  await page.waitForSelector('main .notice.error', { timeout: STEP_MS });
  const failed = await page.$eval('main .notice.error', (e) => e.textContent);
  check(failed === 'registry ' + registry + ': manifest test/busybox:missing not found in test/busybox (HTTP 404)',
        'the failed pull shows the tool\'s message: ' + failed);

  // Every text the status line shows during the pull, in order, and whether Pull was disabled meanwhile.
  await page.$eval(pullForm, (form) => {
    window.__pullTexts = [];
    window.__pullDisabled = [];
    new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) window.__pullTexts.push(n.textContent);
    }).observe(form.querySelector('#pull-status'), { childList: true });
    const button = form.querySelector('button[type=submit]');
    new MutationObserver(() => window.__pullDisabled.push(button.disabled))
      .observe(button, { attributes: true, attributeFilter: ['disabled'] });
  });
  await page.$eval('input[name=ref]', (i) => { i.value = ''; });
  await page.type('input[name=ref]', ref);
  await page.click(pullForm + ' button[type=submit]');
  await waitText(page, 'main .notice.ok', 'Pulled');
  await page.waitForSelector('#image-list', { timeout: STEP_MS });
  const listed = (await api(cookie, 'image_list', {})).body.result.images;
  check(listed.length === 1 && listed[0].digest === digest, 'image_list holds the pulled image: ' + JSON.stringify(listed));
  const size = sizeText(listed[0].size);
  check(await page.$eval('main .notice.ok', (e) => e.textContent) === 'Pulled ' + ref + ' (' + digest.slice(7, 19) + ')',
        'the pull\'s notice');
  const disabled = await page.evaluate(() => window.__pullDisabled);
  check(JSON.stringify(disabled) === '[true,false]', 'Pull is disabled while pulling: ' + JSON.stringify(disabled));
  const seen = await page.evaluate(() => window.__pullTexts);
  check(seen[0] === 'Pulling…' && seen[1] === 'Fetching the manifest…' && seen.includes('3 layers: ' + size + ' of ' + size) &&
        seen[seen.length - 1] === 'Recording the image…', 'the pull\'s progress: ' + JSON.stringify(seen));
  const added = await page.evaluate((ms) => new Date(ms).toLocaleString(), listed[0].created_at);
  const row = await cellTexts(page, '#image-list tbody td');
  check(JSON.stringify(row) === JSON.stringify([ref, 'sha256:' + digest.slice(7, 19) + '…' + digest, size, '3', 'pull', added]),
        'the image\'s row: ' + JSON.stringify(row));
  check(await page.$eval('#image-list tbody td:nth-child(2) span', (s) => s.title) === digest, 'the digest\'s title');
  await shot(page, '17-images');

  await page.goto(BASE + '/#/sandboxes/new');
  await page.waitForSelector('#image-choices option', { timeout: STEP_MS });
  const offered = await page.$$eval('#image-choices option', (os) => os.map((o) => o.value));
  check(JSON.stringify(offered) === JSON.stringify([ref]), 'the create form offers the image: ' + JSON.stringify(offered));

  const made = await api(cookie, 'sandbox_create', { name: 'from-image', image: ref });
  check(made.status === 200, 'sandbox_create from the image: ' + JSON.stringify(made.body));
  await page.goto(BASE + '/#/images');
  await page.waitForSelector('#image-list', { timeout: STEP_MS });
  await page.click('#image-list tbody a');
  await page.waitForSelector('#image-config', { timeout: STEP_MS });
  check(await page.$eval('main h1', (e) => e.textContent) === ref, 'the image page\'s heading');
  check(await page.$eval('#image-digest', (e) => e.textContent) === digest, 'the image page\'s digest');
  const config = await cellTexts(page, '#image-config dd');
  check(JSON.stringify(config) === JSON.stringify(['(none)', '/bin/sh', '/', '(none)', 'PATH']),
        'the image\'s entrypoint, cmd, working dir, user and env names: ' + JSON.stringify(config));
  check(await page.$eval('#image-used-by', (e) => e.textContent) === 'from-image', 'used by from-image');
  const layers = await page.$$eval('#layer-list tbody tr', (rows) => rows.length);
  check(layers === 3, 'three layers listed, not ' + layers);
  await shot(page, '18-image');

  // Remove: Escape keeps it; confirmed while a sandbox is made from it, the tool's refusal; then removed.
  await page.click('#remove-image');
  check(await page.evaluate(() => document.activeElement.id) === 'cancel-remove', 'the dialog focuses Cancel');
  await shot(page, '19-image-remove-confirm');
  await page.keyboard.press('Escape');
  check(await page.$eval('dialog', (d) => !d.open), 'Escape closes the dialog');
  await page.click('#remove-image');
  expectedRefusals.push({ status: 409, url: BASE + '/api/v1/tools/image_remove' });
  await page.click('#confirm-remove');
  await page.waitForSelector('main .notice.error', { timeout: STEP_MS });
  await new Promise((r) => setTimeout(r, 200));  // the console message may follow the response
  check(expectedRefusals.length === 0, 'the refused removal was a 409: ' + JSON.stringify(expectedRefusals));
  const refused = await page.$eval('main .notice.error', (e) => e.textContent);
  check(refused === 'image \'' + ref + '\' is used by sandbox(es) from-image: remove them first',
        'the refused removal: ' + refused);
  const gone = await api(cookie, 'sandbox_remove', { sandbox: 'from-image' });
  check(gone.status === 200, 'sandbox_remove: ' + JSON.stringify(gone.body));

  await atPhoneWidth(page, [['#/images', '20-phone-images', '#image-list'],
                            ['#/images/' + encodeURIComponent(ref), '21-phone-image', '#image-config']]);
  check(await page.$eval('main dl.facts dd:last-child', (e) => e.textContent) === 'no sandbox', 'used by no sandbox');
  await page.click('#remove-image');
  await page.click('#confirm-remove');
  await waitText(page, 'main .notice.ok', 'Removed');
  check(await page.$eval('main .notice.ok', (e) => e.textContent) === 'Removed ' + ref, 'the removal\'s notice');
  await waitText(page, 'main p.muted', 'No images in this org.');
  const left = (await api(cookie, 'image_list', {})).body.result.images;
  check(left.length === 0, 'no image left: ' + JSON.stringify(left));
  console.log('ok images');
}

const evil = createServer((req, res) => {
  // Another origin (another port) in the same browser: a form post, a fetch with the CSRF header, a WebSocket.
  if (req.url === '/evil.js') {
    res.writeHead(200, { 'Content-Type': 'text/javascript' });
    res.end(`
      const isb = ${JSON.stringify(BASE)};
      window.results = {};
      fetch(isb + '/api/v1/tools/sandbox_create', { method: 'POST', credentials: 'include',
          headers: { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' }, body: '{"name":"evil-fetch"}' })
        .then((r) => { window.results.fetch = 'status ' + r.status; }, (e) => { window.results.fetch = 'refused'; });
      fetch(isb + '/api/v1/tools/sandbox_create', { method: 'POST', credentials: 'include', mode: 'no-cors',
          headers: { 'Content-Type': 'text/plain' }, body: '{"name":"evil-nocors"}' })
        .then(() => { window.results.nocors = 'sent'; }, () => { window.results.nocors = 'refused'; });
      const ws = new WebSocket(isb.replace('http', 'ws') + '/api/v1/sandboxes/web-one/terminal');
      ws.onopen = () => { window.results.ws = 'open'; };
      ws.onerror = () => { window.results.ws = 'refused'; };
      setTimeout(() => document.getElementById('f').submit(), 1500);
    `);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/html' });
  res.end(`<!doctype html><form id="f" method="POST" enctype="text/plain"
    action="${BASE}/api/v1/tools/sandbox_create"><input name='{"name":"evil-form","x":"' value='"}'></form>
    <script src="/evil.js"></script>`);
});
await new Promise((r) => evil.listen(0, '127.0.0.1', r));
const evilUrl = 'http://127.0.0.1:' + evil.address().port + '/';

const browser = await puppeteer.launch({
  executablePath: process.env.ISB_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  defaultViewport: { width: 1280, height: 800 },
});
let failed = null;
try {
  // First-run setup from the fragment link; the token leaves the address bar.
  const page = await browser.newPage();
  await watch(page, 'main tab');
  await page.goto(BASE + '/#setup=' + args['setup-token'], { waitUntil: 'networkidle0' });
  await page.waitForSelector('form[aria-label="Create the first admin"]');
  check(!page.url().includes(args['setup-token']), 'the setup token left the address bar: ' + page.url());
  await shot(page, '01-setup');
  await page.type('input[name=user]', USER);
  await page.type('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('#sandbox-list', { timeout: STEP_MS });
  console.log('ok setup');
  const firstCookie = (await page.cookies()).find((c) => c.name === 'isb_session');
  const probe = await fetch(BASE + '/api/v1/events', { headers: { Cookie: 'isb_session=' + firstCookie.value } });
  check(probe.status === 200 && probe.headers.get('content-type') === 'text/event-stream',
        'the events stream answers 200 text/event-stream: ' + probe.status + ' ' + probe.headers.get('content-type'));
  await probe.body?.cancel();

  // Sign out, then sign in with the form.
  await page.click('#sign-out');
  await page.waitForSelector('form[aria-label="Sign in"]', { timeout: STEP_MS });
  await shot(page, '02-sign-in');
  await page.type('input[name=user]', USER);
  await page.type('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('#sandbox-list', { timeout: STEP_MS });
  console.log('ok sign in');

  // First load of the sandboxes list, signed in, from the browser's own clock (performance.now() counts from the
  // navigation's start).
  await page.goto('about:blank');
  await page.goto(BASE + '/#/sandboxes');
  await page.waitForFunction(() => performance.getEntriesByName('isb-sandboxes-listed').length > 0,
                             { timeout: STEP_MS });
  const firstLoad = await page.evaluate(() => performance.getEntriesByName('isb-sandboxes-listed')[0].startTime);
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const calls = performance.getEntriesByType('resource').map((r) => r.name.replace(/^.*\//, '') + ' ' +
                                                              Math.round(r.duration) + ' ms');
    return 'html ' + Math.round(nav.responseEnd) + ' ms, DOMContentLoaded ' + Math.round(nav.domContentLoadedEventEnd) +
           ' ms; ' + calls.join(', ');
  });
  console.log('first load: ' + timing);
  console.log('first_load_ms=' + Math.round(firstLoad));
  await shot(page, '03-sandboxes-empty');

  // Create a sandbox with the form.
  await page.click('a[href="#/sandboxes/new"]');
  await page.waitForSelector('form[aria-label="New sandbox"]');
  check(await page.$('input[name=privileged], input[name=idmap], input[name=mounts]') === null,
        'the create form offers no privileged, raw or mount fields');
  await page.type('input[name=name]', 'web-one');
  await page.$eval('textarea[name=egress]', (t) => { t.value = ''; });
  await page.type('textarea[name=egress]', 'example.com');
  await shot(page, '04-create');
  await page.click('form[aria-label="New sandbox"] button[type=submit]');
  await page.waitForSelector('#sandbox-state', { timeout: 60000 });
  await waitText(page, '#sandbox-state', 'running');
  await waitText(page, '#file-list', '..');
  console.log('ok create');
  await shot(page, '05-sandbox');

  // The terminal: 6*7 computed by the shell in the sandbox.
  await page.click('#open-terminal');
  await waitText(page, '.term-status', 'connected');
  await typeInTerminal(page, 'echo $((6*7))');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === '42'), 'a line reading 42');
  console.log('ok terminal 42');
  await shot(page, '06-terminal');

  // A reload keeps the shell: opening its terminal again attaches to it, with its variables and its output.
  await typeInTerminal(page, 'export KEPT=$((6*8)); echo set-$KEPT');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === 'set-48'), 'a line reading set-48');
  await page.reload();
  await page.waitForSelector('#open-terminal', { timeout: STEP_MS });
  await page.click('#open-terminal');
  await waitText(page, '.term-status', 'reattached');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === '42'), 'the output from before the reload');
  await typeInTerminal(page, 'echo kept-$KEPT');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === 'kept-48'), 'a line reading kept-48');
  console.log('ok reattach after reload');

  // A paste larger than one input call takes (64 KiB): 1000 lines of 99 characters, all of it in the file.
  // Bracketed paste off (its markers would land in the file), and the paste only once cat reads.
  await typeInTerminal(page, 'bind "set enable-bracketed-paste off"; clear; echo READY; cat > /tmp/paste');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === 'READY'), 'a line reading READY');
  await page.$eval('.xterm-helper-textarea', (t) => {
    const data = new DataTransfer();
    data.setData('text/plain', ('x'.repeat(99) + '\n').repeat(1000));
    t.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  });
  await page.keyboard.down('Control');
  await page.keyboard.press('d');
  await page.keyboard.up('Control');
  await typeInTerminal(page, 'clear; wc -c < /tmp/paste');
  await waitForScreen(page, (lines) => lines.some((l) => l.trim() === '100000'), 'a line reading 100000');
  console.log('ok paste 100000');

  // Upload a file into /root and see it with ls in the terminal.
  const upload = join(OUT, 'hello-upload.txt');
  writeFileSync(upload, 'uploaded through the web UI\n');
  const input = await page.$('#upload');
  await input.uploadFile(upload);
  await waitText(page, '#file-list', 'hello-upload.txt');
  await typeInTerminal(page, 'ls /root; cat /root/hello-upload.txt');
  await waitForScreen(page, (lines) => lines.some((l) => l.includes('uploaded through the web UI')) &&
                      lines.some((l) => l.split(/\s+/).includes('hello-upload.txt')), 'the uploaded file');
  console.log('ok upload');

  // Edit the egress list: the daemon holds the new list.
  await page.$eval('#egress-list', (t) => { t.value = ''; });
  await page.type('#egress-list', 'example.com\nexample.org:8443');
  await page.click('form[aria-label="Egress"] button[type=submit]');
  await waitText(page, 'form[aria-label="Egress"] .notice', 'Saved');
  const cookies = await page.cookies();
  const session = cookies.find((c) => c.name === 'isb_session');
  check(session && session.httpOnly && session.sameSite === 'Strict', 'the session cookie is HttpOnly, SameSite=Strict');
  const cookie = 'isb_session=' + session.value;
  const got = await api(cookie, 'sandbox_get', { sandbox: 'web-one' });
  check(JSON.stringify(got.body.result.spec.egress) === JSON.stringify(['example.com', 'example.org:8443']),
        'the egress list saved: ' + JSON.stringify(got.body.result?.spec?.egress));
  console.log('ok egress');
  await shot(page, '07-egress');

  // Usage charts: sandbox_usage answered (in a tab of its own) with known samples an hour, half an hour and no time
  // before the last; each series is drawn against the sandbox's limit, so the points are exact.
  const sbSpec = got.body.result.spec;
  const sbId = got.body.result.id;
  check(sbSpec.mem_limit % 4 === 0 && sbSpec.pids % 4 === 0, 'limits divisible by 4: ' + JSON.stringify(sbSpec));
  const hourAgo = Date.parse('2026-01-01T00:00:00Z');
  const at = (s) => new Date(hourAgo + s * 1000).toISOString();
  // Network counts are cumulative: in, 1000 then 2000 bytes a second; out, nothing then 500 a second.
  const samples = [
    { at: at(0), cpu_cores: 0, memory_bytes: 0, pids: 0, net_rx_bytes: 0, net_tx_bytes: 0 },
    { at: at(1800), cpu_cores: sbSpec.cpus / 2, memory_bytes: sbSpec.mem_limit / 4, pids: sbSpec.pids / 2,
      net_rx_bytes: 1800 * 1000, net_tx_bytes: 0 },
    { at: at(3600), cpu_cores: sbSpec.cpus, memory_bytes: sbSpec.mem_limit / 2, pids: sbSpec.pids / 4,
      net_rx_bytes: 1800 * 3000, net_tx_bytes: 1800 * 500 },
  ];
  const charts = await browser.newPage();
  await watch(charts, 'charts tab');
  await charts.setRequestInterception(true);
  const previewCalls = [];
  charts.on('request', (req) => {
    if (req.url() === BASE + '/api/v1/tools/sandbox_usage') {
      void req.respond({ status: 200, contentType: 'application/json', body: JSON.stringify({
        result: { sandbox: sbId, state: 'running', interval_s: 2, samples } }) });
      return;
    }
    if (req.url() === BASE + '/api/v1/tools/sandbox_port_open') previewCalls.push(JSON.parse(req.postData()));
    void req.continue();
  });
  await charts.goto(BASE + '/#/sandboxes/web-one', { waitUntil: 'domcontentloaded' });
  await charts.waitForSelector('#usage-cpu', { timeout: STEP_MS });
  const drawn = await charts.evaluate(() => ['cpu', 'memory', 'pids', 'net-rx', 'net-tx'].map((k) =>
    document.getElementById('usage-' + k).getAttribute('points')));
  check(JSON.stringify(drawn) === JSON.stringify(['0,100 180,50 360,0', '0,100 180,75 360,50', '0,100 180,50 360,75',
                                                  '0,100 180,50 360,0', '0,100 180,100 360,0']),
        'the usage charts\' points: ' + JSON.stringify(drawn));
  const netCaptions = await charts.$$eval('#usage-charts figcaption', (els) => els.slice(3).map((e) => e.textContent));
  check(JSON.stringify(netCaptions) === JSON.stringify(['Network in: 2.0 KiB/s (5.1 MiB in all)',
                                                        'Network out: 500 B/s (878.9 KiB in all)']),
        'the network charts\' captions: ' + JSON.stringify(netCaptions));
  check(await charts.$eval('#usage-charts svg', (e) => e.getAttribute('aria-label')) === 'CPU over the last hour',
        'the CPU chart is labelled');
  console.log('ok usage charts');
  await shot(charts, '07b-usage');

  // Open preview: sandbox_port_open called for the port, its one-time link opened in a new tab at the preview's
  // own origin, <port>-<sandbox id>-<org>.localhost on isb's port, with no opener and no referrer.
  await charts.evaluate(() => {
    const click = HTMLAnchorElement.prototype.click;
    window.__anchorsClicked = [];
    HTMLAnchorElement.prototype.click = function () {
      window.__anchorsClicked.push([this.target, this.rel]);
      return click.call(this);
    };
  });
  await charts.type('#preview-port', '8080');
  await charts.click('#open-preview');
  const previewTab = await browser.waitForTarget((t) => t.url().startsWith('http://8080-'), { timeout: STEP_MS });
  check(JSON.stringify(previewCalls) === JSON.stringify([{ sandbox: 'web-one', port: 8080 }]),
        'one sandbox_port_open call: ' + JSON.stringify(previewCalls));
  const previewUrl = new URL(previewTab.url());
  check(previewUrl.host === '8080-' + sbId + '-default.localhost:' + new URL(BASE).port,
        'the preview opened at its own origin: ' + previewTab.url());
  const clicked = await charts.evaluate(() => window.__anchorsClicked);
  check(JSON.stringify(clicked) === JSON.stringify([['_blank', 'noopener noreferrer']]),
        'the link opened in a new tab with rel=noopener noreferrer: ' + JSON.stringify(clicked));
  await waitText(charts, '#h-ports ~ div .notice', 'Preview of port 8080 opened in a new tab');
  console.log('ok open preview');
  await (await previewTab.page())?.close();
  await charts.close();
  await page.bringToFront();

  // Seven more tabs on the list, eight with this one: more than the 6 connections chromium opens to a host, and
  // than the daemon's streams per account. The browser holds one events stream, in one tab, and a sandbox made
  // through the API appears in every tab without a reload. (Not networkidle: a stream stays open.)
  const tabs = [];
  for (let i = 0; i < 7; i++) {
    const tab = await browser.newPage();
    await watch(tab, 'tab ' + (i + 2));
    await tab.goto(BASE + '/#/sandboxes', { waitUntil: 'domcontentloaded' });
    await waitText(tab, '#sandbox-list', 'web-one');
    await tab.evaluate(() => { window.__noReload = true; });
    tabs.push(tab);
  }
  const all = [page, ...tabs];
  const streams = async () => (await Promise.all(all.map((t) => t.evaluate(() => window.__isbOpen.es))))
    .reduce((a, b) => a + b, 0);
  const leaders = async () => (await Promise.all(all.map((t) => t.evaluate(() => window.__isbEventsLeading()))))
    .filter((x) => x).length;
  check(await streams() === 1, 'one events stream in the browser, not ' + await streams());
  check(await leaders() === 1, 'one tab holds the stream, not ' + await leaders());
  const made = await api(cookie, 'sandbox_create', { name: 'from-api' });
  check(made.status === 200, 'sandbox_create through the API: ' + JSON.stringify(made.body));
  for (const tab of tabs) {
    await waitText(tab, '#sandbox-list', 'from-api');
    check(await tab.evaluate(() => window.__noReload === true), 'a tab was reloaded');
  }
  console.log('ok live list');
  await shot(tabs[0], '08-live-list');
  // The tab holding the stream leaves the pages that listen: another takes it over, and hears what comes next.
  await page.bringToFront();
  await page.goto(BASE + '/#/members');
  await page.waitForSelector('#member-list', { timeout: STEP_MS });
  await new Promise((r) => setTimeout(r, 500));
  check(await streams() === 1 && await leaders() === 1, 'one stream after the leader left: ' + await streams());
  const stopped = await api(cookie, 'sandbox_stop', { sandbox: 'from-api' });
  check(stopped.status === 200, 'sandbox_stop through the API: ' + JSON.stringify(stopped.body));
  for (const tab of tabs) await waitText(tab, '#sandbox-list tr', 'stopped');
  console.log('ok one stream for ' + all.length + ' tabs');
  for (const tab of tabs) await tab.close();
  await page.bringToFront();

  // Fast navigation: pages left before they finished loading keep no stream or terminal open.
  await page.goto(BASE + '/#/sandboxes/web-one');
  await page.waitForSelector('#open-terminal', { timeout: STEP_MS });
  await page.click('#open-terminal');
  await waitText(page, '.term-status', 'connected');
  for (const hash of ['#/sandboxes', '#/sandboxes/web-one', '#/members', '#/sandboxes', '#/sandboxes/web-one',
                      '#/sandboxes', '#/sandboxes/web-one', '#/audit']) {
    await page.evaluate((h) => { location.hash = h; }, hash);
    await new Promise((r) => setTimeout(r, 15));
  }
  await page.waitForSelector('#audit-list', { timeout: STEP_MS });
  await new Promise((r) => setTimeout(r, 3000));
  const left = await page.evaluate(() => window.__isbOpen);
  check(left.es === 0 && left.ws === 0, 'streams and terminals left open: ' + JSON.stringify(left));
  console.log('ok fast navigation');

  await imagesStep(page, cookie);

  // Every other page, at 1280x800 and at 390 px wide.
  for (const [path, name, ready] of [['#/members', '09-members', '#member-list'], ['#/tokens', '10-tokens', '#token-list'],
                                     ['#/secrets', '11-secrets', 'main h1'], ['#/audit', '12-audit', '#audit-list']]) {
    await page.goto(BASE + '/' + path);
    await page.waitForSelector(ready, { timeout: STEP_MS });
    await shot(page, name);
  }
  // Platform admins: an org made and its quota set in the Orgs page.
  await page.goto(BASE + '/#/orgs');
  await page.waitForSelector('form[aria-label="New org"]', { timeout: STEP_MS });
  await page.type('input[name=org-name]', 'acme');
  await page.click('form[aria-label="New org"] button[type=submit]');
  await page.waitForSelector('form[aria-label="Quota of acme"]', { timeout: STEP_MS });
  await page.type('form[aria-label="Quota of acme"] input[name=instances]', '5');
  await page.click('form[aria-label="Quota of acme"] button[type=submit]');
  await waitText(page, 'form[aria-label="Quota of acme"] .notice', 'Saved');
  const acme = await (await fetch(BASE + '/api/v1/tools/org_get', { method: 'POST', body: '{}', headers: {
    'Content-Type': 'application/json', 'X-Isb-Csrf': '1', 'X-Isb-Org': 'acme', Cookie: cookie } })).json();
  check(acme.result && acme.result.quota.instances === 5, 'acme\'s quota: ' + JSON.stringify(acme));
  await shot(page, '14-orgs');
  console.log('ok orgs');
  await page.goto(BASE + '/#/audit');
  await page.waitForSelector('#audit-list', { timeout: STEP_MS });
  await page.click('#verify');
  await waitText(page, '#verify-result', 'Audit log: intact');
  console.log('ok audit verify');
  await shot(page, '13-audit-verified');
  await atPhoneWidth(page, [['#/sandboxes', '15-phone-sandboxes', '#sandbox-list'],
                            ['#/sandboxes/web-one', '16-phone-sandbox', '#sandbox-state']]);
  console.log('ok pages');

  // Keyboard alone: Tab reaches the navigation's links, each control has a label.
  await page.goto(BASE + '/#/sandboxes/new');
  await page.waitForSelector('form[aria-label="New sandbox"]');
  const unlabelled = await unlabelledControls(page);
  check(unlabelled === 0, unlabelled + ' controls have no label');
  console.log('ok labels');

  // Another origin cannot change anything, though the browser holds the session.
  const attacker = await browser.newPage();
  await attacker.goto(evilUrl);
  await attacker.waitForFunction(() => window.results && window.results.fetch && window.results.nocors &&
                                 window.results.ws, { timeout: STEP_MS });
  const results = await attacker.evaluate(() => window.results);
  await new Promise((r) => setTimeout(r, 2500));  // the form posts at 1.5 s
  const after = await api(cookie, 'sandbox_list', {});
  const names = after.body.result.sandboxes.map((s) => s.name).sort();
  check(results.fetch === 'refused', 'the cross-origin fetch with X-Isb-Csrf was refused: ' + results.fetch);
  check(results.ws === 'refused', 'the cross-origin WebSocket was refused: ' + results.ws);
  check(JSON.stringify(names) === JSON.stringify(['from-api', 'web-one']),
        'the cross-origin form, fetch and no-cors fetch created nothing: ' + JSON.stringify(names));
  console.log('ok cross-origin refused');
  await attacker.close();
  await page.bringToFront();

  // Sign out: the cookie stops working.
  await page.goto(BASE + '/#/sandboxes');
  await page.waitForSelector('#sign-out');
  await page.click('#sign-out');
  await page.waitForSelector('form[aria-label="Sign in"]', { timeout: STEP_MS });
  const afterSignOut = await api(cookie, 'whoami', {});
  check(afterSignOut.status === 401, 'the old session is refused after sign-out: ' + afterSignOut.status);
  console.log('ok sign out');

  console.log('csp_violations=' + problems.csp.length + ' console_errors=' + problems.console.length);
  check(problems.csp.length === 0, 'CSP violations:\n' + problems.csp.join('\n'));
  check(problems.console.length === 0, 'console errors:\n' + problems.console.join('\n'));
} catch (e) {
  failed = e;
  console.log('csp_violations=' + problems.csp.length + ' console_errors=' + problems.console.length);
  for (const p of [...problems.csp, ...problems.console]) console.log('  ' + p);
  try {
    const pages = await browser.pages();
    await pages[pages.length - 1].screenshot({ path: join(OUT, 'failure.png'), fullPage: true });
  } catch {
    // no page to show
  }
} finally {
  await browser.close();
  evil.close();
}
if (failed) {
  console.error(failed.stack || String(failed));
  process.exit(1);
}
console.log('PASS');
