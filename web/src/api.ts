// Calls to isb's REST API with the session cookie: every tool is a POST of its input, and every one carries
// X-Isb-Csrf (which a cross-origin page could only send after a CORS preflight isb never grants).

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
}

const ORG_KEY = 'isb.org';
const SIGNED_IN_KEY = 'isb.signed_in';

export function currentOrg(): string {
  return localStorage.getItem(ORG_KEY) || 'default';
}

export function setOrg(org: string): void {
  localStorage.setItem(ORG_KEY, org);
}

// Whether this browser signed in (the cookie itself is HttpOnly): a page load then asks who it is instead of
// showing the sign-in form.
export function maybeSignedIn(): boolean {
  return localStorage.getItem(SIGNED_IN_KEY) === '1';
}

export function rememberSignedIn(yes: boolean): void {
  if (yes) localStorage.setItem(SIGNED_IN_KEY, '1');
  else localStorage.removeItem(SIGNED_IN_KEY);
}

let onUnauthenticated: () => void = () => {};
export function whenUnauthenticated(f: () => void): void {
  onUnauthenticated = f;
}

function send(path: string, body: unknown, org?: string): Promise<Response> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' };
  if (org) headers['X-Isb-Org'] = org;
  return fetch(path, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
}

async function post(path: string, body: unknown, org?: string): Promise<any> {
  const r = await send(path, body, org);
  const text = await r.text();
  let parsed: any = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { error: 'bad_response', message: text.slice(0, 200) };
  }
  if (!r.ok) throw refused(r, parsed);
  return parsed;
}

// The error of a response isb refused; a 401 also shows the sign-in form.
function refused(r: Response, parsed: any): ApiError {
  if (r.status === 401) {
    rememberSignedIn(false);
    onUnauthenticated();
  }
  return new ApiError(r.status, parsed.error || 'error', parsed.message || r.statusText);
}

// A tool's result, in the org chosen (or `org`).
export async function call<T = any>(tool: string, input: object = {}, org: string = currentOrg()): Promise<T> {
  const body = await post('/api/v1/tools/' + tool, input, org);
  return body.result as T;
}

export function signIn(user: string, password: string): Promise<any> {
  return post('/api/v1/auth/signin', { user, password });
}

export function signOut(): Promise<any> {
  return post('/api/v1/auth/signout', {});
}

export function setUp(setupToken: string, user: string, password: string): Promise<any> {
  return post('/api/v1/auth/setup', { setup_token: setupToken, user, password });
}

// A streaming tool's call (`?stream=1`, Server-Sent Events over the POST's response): each event but the last goes to
// `onEvent` with its data parsed; the last is the result, or an error thrown as an ApiError with the tool's message.
export async function callStream<T = any>(tool: string, input: object,
                                          onEvent: (event: string, data: any) => void,
                                          org: string = currentOrg()): Promise<T> {
  const r = await send('/api/v1/tools/' + tool + '?stream=1', input, org);
  if (!r.ok || !r.body) {
    // Refused before it began (the role, the schema): an ordinary JSON error.
    throw refused(r, await r.json().catch(() => ({})));
  }
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += (data ? '\n' : '') + line.slice(6);
      }
      if (data === '') continue;  // a keep-alive comment
      const parsed = JSON.parse(data);
      if (event === 'result') return parsed.result as T;
      // The stream began with 200: the tool's failure comes as its last event.
      if (event === 'error') throw new ApiError(r.status, parsed.error || 'error', parsed.message || 'failed');
      onEvent(event, parsed);
    }
  }
  throw new ApiError(0, 'unavailable', tool + ': the stream ended before a result');
}
