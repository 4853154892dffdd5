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

async function post(path: string, body: unknown, org?: string): Promise<any> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' };
  if (org) headers['X-Isb-Org'] = org;
  const r = await fetch(path, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const text = await r.text();
  let parsed: any = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { error: 'bad_response', message: text.slice(0, 200) };
  }
  if (!r.ok) {
    if (r.status === 401) {
      rememberSignedIn(false);
      onUnauthenticated();
    }
    throw new ApiError(r.status, parsed.error || 'error', parsed.message || r.statusText);
  }
  return parsed;
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
