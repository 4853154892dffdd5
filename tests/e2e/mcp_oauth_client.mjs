// The OAuth end of the e2e suite: the official TypeScript SDK's OAuth client flow against a real `isb serve`, with
// the consent approved over HTTP by a signed-in session, then the refusals a client may meet.
// Usage: node mcp_oauth_client.mjs BASE_URL SESSION_COOKIE [document PORT CERT_DIR]. With `document`, the client
// is known by the URL of its metadata document, served here over https on localhost:PORT (CERT_DIR's cert.pem and
// key.pem), instead of registering. Prints one JSON line of observations.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [base, cookie, mode, docPort, certDir] = process.argv.slice(2);
const redirectUrl = 'http://127.0.0.1:9/callback';
const obs = { ok: false, steps: [] };
const step = (name) => obs.steps.push(name);

// An OAuthClientProvider that keeps everything in memory and hands the authorization URL to the test.
class Provider {
  constructor(clientMetadataUrl) { this.saved = {}; this.clientMetadataUrl = clientMetadataUrl; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return { client_name: 'isb-e2e', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
             response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
}

// The signed-in user's browser: the consent page, then its Allow button. Returns the 302's Location.
async function consent(authorizationUrl, fields = 'org=default&role=member&decision=approve') {
  const page = await fetch(authorizationUrl, { headers: { Cookie: cookie } });
  const html = await page.text();
  const id = /name="request" value="([^"]+)"/.exec(html)?.[1];
  if (!id) throw new Error(`no consent form (${page.status}): ${html.slice(0, 300)}`);
  obs.consentPage ??= { status: page.status, csp: page.headers.get('content-security-policy'),
                        namesClient: html.includes('<strong>isb-e2e</strong> asks'),
                        namesRedirectHost: html.includes('<strong>127.0.0.1:9</strong>'),
                        namesOrg: html.includes('<option value="default">default (you are member)</option>') };
  const answer = await fetch(`${base}/oauth/authorize`, {
    method: 'POST', redirect: 'manual', body: `request=${id}&${fields}`,
    headers: { Cookie: cookie, Origin: base, 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  return new URL(answer.headers.get('location'));
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

// A code for the registered client, by hand: `resource` and `redirect` as given.
async function manualCode(clientId, { resource = `${base}/mcp`, redirect = redirectUrl } = {}) {
  const p = pkce();
  const url = new URL(`${base}/oauth/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirect,
    code_challenge: p.challenge, code_challenge_method: 'S256', state: 'st', resource })) url.searchParams.set(k, v);
  const back = await consent(url);
  return { code: back.searchParams.get('code'), verifier: p.verifier };
}

async function token(params) {
  const r = await fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams(params),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  return { status: r.status, body: await r.json() };
}

async function mcpStatus(accessToken, path = '/mcp') {
  const r = await fetch(`${base}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${accessToken}`,
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18',
      capabilities: {}, clientInfo: { name: 'isb-e2e', version: '1.0.0' } } }) });
  return { status: r.status, wwwAuthenticate: r.headers.get('www-authenticate'), body: await r.text() };
}

// The client's metadata documents, and the times each path was asked for.
function serveDocuments(port, dir) {
  const url = (path) => `https://localhost:${port}${path}`;
  const doc = (id) => JSON.stringify({ client_id: id, client_name: 'isb-e2e-document', redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' });
  const asked = {};
  const server = createServer({ cert: readFileSync(`${dir}/cert.pem`), key: readFileSync(`${dir}/key.pem`) }, (req, res) => {
    asked[req.url] = (asked[req.url] ?? 0) + 1;
    if (req.url === '/client.json') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=300' }).end(doc(url('/client.json')));
    } else if (req.url === '/wrong-id.json') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(doc(url('/client.json')));
    } else if (req.url === '/moved.json') {
      res.writeHead(302, { Location: url('/client.json') }).end();
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(Number(port), '127.0.0.1', () => resolve({ server, asked, url })));
}

// What an error page's paragraph says, its entities read back.
const pageText = (html) => (/<p>(.*?)<\/p>/s.exec(html)?.[1] ?? html).replaceAll('&#39;', "'").replaceAll('&quot;', '"')
  .replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');

async function refusedPage(clientId) {
  const url = new URL(`${base}/oauth/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirectUrl,
    code_challenge: pkce().challenge, code_challenge_method: 'S256' })) url.searchParams.set(k, v);
  const page = await fetch(url, { headers: { Cookie: cookie }, redirect: 'manual' });
  return { status: page.status, says: pageText(await page.text()) };
}

// The SDK's first connect, refused for want of a token: the provider then holds the authorization URL. Returns the
// transport, whose finishAuth takes the code.
async function firstConnect(provider) {
  const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  try {
    await new Client({ name: 'isb-e2e', version: '1.0.0' }).connect(first);
    throw new Error('connected without authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  step('redirected');
  return first;
}

async function documentFlow() {
  const { server, asked, url } = await serveDocuments(docPort, certDir);
  try {
    const provider = new Provider(url('/client.json'));
    const first = await firstConnect(provider);
    obs.clientIdSent = new URL(provider.authorizationUrl).searchParams.get('client_id');
    const page = await fetch(provider.authorizationUrl, { headers: { Cookie: cookie } });
    const html = await page.text();
    obs.consentPage = { status: page.status, namesClient: html.includes('<strong>isb-e2e-document</strong> asks'),
      namesPublisher: html.includes(`<p>The name is what <strong>localhost:${docPort}</strong> publishes for this client at <code>${url('/client.json')}</code>`) };
    const back = await consent(provider.authorizationUrl);
    await first.finishAuth(back.searchParams.get('code'));
    step('finishAuth');
    const client = new Client({ name: 'isb-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    obs.toolCount = (await client.listTools()).tools.length;
    await client.close();
    step('connected');
    obs.refreshed = (await token({ grant_type: 'refresh_token', client_id: url('/client.json'),
      refresh_token: provider.saved.tokens.refresh_token })).status;
    obs.wrongId = await refusedPage(url('/wrong-id.json'));
    obs.moved = await refusedPage(url('/moved.json'));
    obs.notAllowed = await refusedPage(`https://127.0.0.1:${docPort}/client.json`);
    obs.asked = asked;
    step('refusals');
    obs.ok = true;
  } finally {
    server.close();
  }
}

async function registeredFlow() {
  const provider = new Provider();
  const first = await firstConnect(provider);
  const back = await consent(provider.authorizationUrl);
  const code = back.searchParams.get('code');
  obs.callback = { hasCode: !!code, state: back.searchParams.get('state'), iss: back.searchParams.get('iss') };
  await first.finishAuth(code);
  step('finishAuth');
  const client = new Client({ name: 'isb-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
  const { tools } = await client.listTools();
  obs.toolCount = tools.length;
  await client.close();
  step('connected');
  const clientId = provider.saved.client.client_id;

  // Refusals, each with a code of its own.
  const wrong = await manualCode(clientId);
  obs.wrongVerifier = await token({ grant_type: 'authorization_code', client_id: clientId, code: wrong.code,
    code_verifier: pkce().verifier, redirect_uri: redirectUrl });
  const other = await manualCode(clientId);
  obs.otherRedirect = await token({ grant_type: 'authorization_code', client_id: clientId, code: other.code,
    code_verifier: other.verifier, redirect_uri: 'http://127.0.0.1:9/elsewhere' });
  const unregistered = new URL(provider.authorizationUrl);
  unregistered.searchParams.set('redirect_uri', 'http://127.0.0.1:9/elsewhere');
  const page = await fetch(unregistered, { headers: { Cookie: cookie }, redirect: 'manual' });
  obs.unregisteredRedirect = { status: page.status, location: page.headers.get('location'),
    says: (await page.text()).includes(`redirect_uri: not one registered for client ${clientId}`) };
  const elsewhere = await manualCode(clientId, { resource: `${base}/orgs/default/mcp` });
  const forOrg = await token({ grant_type: 'authorization_code', client_id: clientId, code: elsewhere.code,
    code_verifier: elsewhere.verifier, redirect_uri: redirectUrl });
  obs.otherResource = { atMcp: await mcpStatus(forOrg.body.access_token),
                        atItsOwn: (await mcpStatus(forOrg.body.access_token, '/orgs/default/mcp')).status };

  // Refresh rotation: the SDK's refresh token once, then again.
  const oldRefresh = provider.saved.tokens.refresh_token;
  obs.refreshed = await token({ grant_type: 'refresh_token', client_id: clientId, refresh_token: oldRefresh });
  obs.reusedRefresh = await token({ grant_type: 'refresh_token', client_id: clientId, refresh_token: oldRefresh });
  obs.afterReuse = (await mcpStatus(obs.refreshed.body.access_token)).status;
  delete obs.refreshed.body.access_token;
  delete obs.refreshed.body.refresh_token;

  // The SDK's own code, replayed.
  const replayCode = await manualCode(clientId);
  const got = await token({ grant_type: 'authorization_code', client_id: clientId, code: replayCode.code,
    code_verifier: replayCode.verifier, redirect_uri: redirectUrl });
  obs.replayed = await token({ grant_type: 'authorization_code', client_id: clientId, code: replayCode.code,
    code_verifier: replayCode.verifier, redirect_uri: redirectUrl });
  obs.afterReplay = (await mcpStatus(got.body.access_token)).status;
  step('refusals');
  obs.ok = true;
}

try {
  await (mode === 'document' ? documentFlow() : registeredFlow());
} catch (e) {
  obs.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(obs));
