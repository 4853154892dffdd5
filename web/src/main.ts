// The shell: hash routing, the header (navigation, org switcher, sign-out), and the pages that need no sign-in
// (first-run setup from /#setup=TOKEN, sign-in, an invitation from /#invite=TOKEN). Tokens in links stay in the
// fragment, which browsers never send to a server, and leave the address bar once read.
import '@xterm/xterm/css/xterm.css';
import './style.css';
import { call, currentOrg, maybeSignedIn, rememberSignedIn, setOrg, setUp, signIn, signOut,
         whenUnauthenticated } from './api';
import { routeStylesThroughCssom } from './csp_styles';
import { h, append, clear, field, notice } from './dom';
import { Page, PageFactory } from './page';
import { SandboxCreatePage, SandboxListPage } from './sandboxes';
import { SandboxPage } from './sandbox';
import { ImageListPage, ImagePage } from './images';
import { AuditPage, MembersPage, SecretsPage, TokensPage } from './admin';
import { OrgsPage } from './orgs';

// The navigation, in order; a page for a new capability is one more entry (a page of one item, a route below).
const NAV: { path: string; label: string; page: PageFactory; platformAdmin?: boolean }[] = [
  { path: 'sandboxes', label: 'Sandboxes', page: () => new SandboxListPage() },
  { path: 'images', label: 'Images', page: () => new ImageListPage() },
  { path: 'secrets', label: 'Secrets', page: () => new SecretsPage() },
  { path: 'members', label: 'Members', page: () => new MembersPage() },
  { path: 'tokens', label: 'Tokens', page: () => new TokensPage() },
  { path: 'audit', label: 'Audit', page: () => new AuditPage() },
  { path: 'orgs', label: 'Orgs', page: () => new OrgsPage(), platformAdmin: true },
];

let current: Page | null = null;
let who: any = null;
// Counts navigations: a route() that finds a later one began while it waited gives up (the later one shows its
// page), so a page never opens a stream or terminal for a view already left.
let navigation = 0;
const app = document.getElementById('app') as HTMLElement;

function leave(): void {
  navigation++;
  current?.dispose?.();
  current = null;
}

// A token from the fragment ("#setup=TOKEN"), removed from the address bar and history at once.
function takeFragmentToken(name: string): string | null {
  const m = location.hash.match(new RegExp('^#' + name + '=([A-Za-z0-9_\\-.]+)$'));
  if (!m) return null;
  history.replaceState(null, '', location.pathname);
  return m[1];
}

function authForm(title: string, submitLabel: string, onSubmit: (user: string, password: string) => Promise<void>,
                  extra?: Node): HTMLElement {
  const user = h('input', { name: 'user', autocomplete: 'username', required: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password',
                                required: true });
  const out = h('div');
  const submit = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  const form = h('form', { class: 'form narrow', 'aria-label': title }, h('h1', {}, title), extra || null,
                 field('User', user), field('Password', password), submit, out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    clear(out);
    try {
      await onSubmit(user.value, password.value);
    } catch (e) {
      append(out, notice((e as Error).message));
      submit.disabled = false;
    }
  });
  setTimeout(() => user.focus());
  return form;
}

function showBare(node: Node): void {
  leave();
  clear(app);
  append(app, h('main', { id: 'main', class: 'bare' }, h('p', { class: 'brand' }, 'isb'), node));
}

async function afterSignIn(): Promise<void> {
  rememberSignedIn(true);
  who = null;
  location.hash = '#/sandboxes';
  await route();
}

function showSignIn(): void {
  document.title = 'Sign in · isb';
  showBare(authForm('Sign in', 'Sign in', async (user, password) => {
    await signIn(user, password);
    await afterSignIn();
  }));
}

function showSetup(token: string): void {
  document.title = 'Set up · isb';
  showBare(authForm('Create the first admin', 'Create and sign in', async (user, password) => {
    await setUp(token, user, password);
    await signIn(user, password);
    await afterSignIn();
  }, h('p', {}, 'This one-time link makes the platform admin of this isb.')));
}

async function signOutEverywhere(): Promise<void> {
  const r = await call('session_list');
  // Every other session first: this one's cookie is what the calls carry.
  for (const s of r.sessions) {
    if (!s.current) await call('session_revoke', { id: s.id });
  }
  await signOut();
}

async function header(active: string): Promise<HTMLElement> {
  if (!who) who = await call('whoami');
  let orgs: string[] = [currentOrg()];
  try {
    const r = await call('org_list');
    orgs = r.orgs.map((o: any) => o.name);
  } catch {
    // a token or user that may not list orgs keeps the one chosen
  }
  if (!orgs.includes(currentOrg()) && orgs.length > 0) setOrg(orgs.includes('default') ? 'default' : orgs[0]);
  const picker = h('select', { id: 'org', name: 'org' },
                   ...orgs.map((o) => h('option', { value: o, selected: o === currentOrg() }, o)));
  picker.addEventListener('change', () => {
    setOrg(picker.value);
    void route();
  });
  const out = h('span');
  const done = () => {
    rememberSignedIn(false);
    who = null;
    location.hash = '#/signin';
  };
  const signOutButton = h('button', { type: 'button', id: 'sign-out' }, 'Sign out');
  signOutButton.addEventListener('click', () => void signOut().then(done, (e) => append(out, notice(e.message))));
  const everywhere = h('button', { type: 'button', id: 'sign-out-everywhere' }, 'Sign out everywhere');
  everywhere.addEventListener('click', () => void signOutEverywhere().then(done, (e) => append(out, notice(e.message))));
  const visible = NAV.filter((n) => !n.platformAdmin || who.platform_admin);
  const skip = h('button', { type: 'button', class: 'skip' }, 'Skip to content');
  skip.addEventListener('click', () => (document.getElementById('main') as HTMLElement).focus());
  return h('header', { class: 'top' }, skip,
           h('span', { class: 'brand' }, 'isb'),
           h('nav', { 'aria-label': 'Main' }, h('ul', {}, ...visible.map((n) =>
             h('li', {}, h('a', { href: '#/' + n.path, 'aria-current': n.path === active ? 'page' : undefined },
                           n.label))))),
           h('div', { class: 'account' }, field('Org', picker),
             h('span', { class: 'muted', id: 'whoami' }, who.user || who.subject), signOutButton, everywhere, out));
}

async function route(): Promise<void> {
  const setup = takeFragmentToken('setup');
  if (setup) return showSetup(setup);
  const invite = takeFragmentToken('invite');
  if (invite) sessionStorage.setItem('isb.invite', invite);
  if (location.hash === '#/signin' || !maybeSignedIn()) return showSignIn();

  const parts = location.hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '');
  if (parts.length === 0) parts.push('sandboxes');
  let page: Page;
  let params: string[] = [];
  if (parts[0] === 'sandboxes' && parts[1] === 'new') page = new SandboxCreatePage();
  else if (parts[0] === 'sandboxes' && parts[1]) {
    page = new SandboxPage();
    params = [decodeURIComponent(parts[1])];
  } else if (parts[0] === 'images' && parts[1]) {
    page = new ImagePage();
    params = [decodeURIComponent(parts[1])];
  } else page = (NAV.find((n) => n.path === parts[0]) || NAV[0]).page();
  leave();
  const mine = navigation;
  let top: HTMLElement;
  try {
    top = await header(parts[0]);
  } catch {
    return;  // 401: whenUnauthenticated shows the sign-in form
  }
  if (mine !== navigation) return;
  const main = h('main', { id: 'main', tabindex: '-1' });
  clear(app);
  append(app, top, main);
  current = page;
  document.title = page.title + ' · isb';
  const pending = sessionStorage.getItem('isb.invite');
  if (pending) {
    sessionStorage.removeItem('isb.invite');
    try {
      const r = await call('invitation_accept', { invitation: pending });
      append(main, notice('You joined ' + r.org + ' as ' + r.role, 'ok'));
    } catch (e) {
      append(main, notice('The invitation: ' + (e as Error).message));
    }
    if (mine !== navigation) return;
  }
  await page.render(main, params);
}

routeStylesThroughCssom();
whenUnauthenticated(() => {
  who = null;
  showSignIn();
});
window.addEventListener('hashchange', () => void route());
void route();
