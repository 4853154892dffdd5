// isb's web UI in Debian's chromium, driven by puppeteer-core, against a real `isb serve`: first-run setup from the
// fragment link, sign-in, a sandbox created in the form, its terminal (echo $((6*7)) reads 42 off the screen, and a
// reload attaches to the same shell), an upload seen by `ls`, the egress list edited, a sandbox made through the API
// appearing in a second tab without a reload, every page visited (and at 390 px), a cross-origin page that cannot
// change anything, sign-out. Every page must log no console error and no CSP violation. Screenshots go to OUT.
//
// Usage: node ui_test.mjs --base http://127.0.0.1:PORT --setup-token TOKEN --node-modules DIR --out DIR
// Prints "ok NAME" per step, "first_load_ms=N" and "csp_violations=0 console_errors=0"; exits 1 on any failure.
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
  (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
for (const k of ['base', 'setup-token', 'node-modules', 'out']) {
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
  const samples = [
    { at: at(0), cpu_cores: 0, memory_bytes: 0, pids: 0 },
    { at: at(1800), cpu_cores: sbSpec.cpus / 2, memory_bytes: sbSpec.mem_limit / 4, pids: sbSpec.pids / 2 },
    { at: at(3600), cpu_cores: sbSpec.cpus, memory_bytes: sbSpec.mem_limit / 2, pids: sbSpec.pids / 4 },
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
  const drawn = await charts.evaluate(() => ['cpu', 'memory', 'pids'].map((k) =>
    document.getElementById('usage-' + k).getAttribute('points')));
  check(JSON.stringify(drawn) === JSON.stringify(['0,100 180,50 360,0', '0,100 180,75 360,50', '0,100 180,50 360,75']),
        'the usage charts\' points: ' + JSON.stringify(drawn));
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
  await page.setViewport({ width: 390, height: 844 });
  for (const [path, name, ready] of [['#/sandboxes', '15-phone-sandboxes', '#sandbox-list'],
                                     ['#/sandboxes/web-one', '16-phone-sandbox', '#sandbox-state']]) {
    await page.goto(BASE + '/' + path);
    await page.waitForSelector(ready, { timeout: STEP_MS });
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 390, name + ' fits 390 px (it is ' + width + ' px wide)');
    await shot(page, name);
  }
  await page.setViewport({ width: 1280, height: 800 });
  console.log('ok pages');

  // Keyboard alone: Tab reaches the navigation's links, each control has a label.
  await page.goto(BASE + '/#/sandboxes/new');
  await page.waitForSelector('form[aria-label="New sandbox"]');
  const unlabelled = await page.$$eval('input, select, textarea', (els) => els.filter((e) =>
    !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && e.type !== 'hidden').length);
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
