// The org's people and credentials (members, invitations, tokens, browser sessions), its audit log with the chain
// check, and its secrets (names, versions, hosts; a value only on Reveal, for 30 s).
import { call, ApiError } from './api';
import { h, append, clear, field, when, notice } from './dom';
import { Page } from './page';

function table(id: string, headings: string[], rows: HTMLElement[]): HTMLTableElement {
  return h('table', { class: 'list', id },
           h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', { scope: 'col' }, t)))),
           h('tbody', {}, ...rows));
}

function cells(...values: (string | Node)[]): HTMLTableRowElement {
  return h('tr', {}, ...values.map((v) => h('td', {}, v)));
}

function roleSelect(name: string): HTMLSelectElement {
  return h('select', { name }, ...['viewer', 'member', 'admin', 'owner'].map((r) =>
    h('option', { value: r, selected: r === 'member' }, r)));
}

// A button running `f`, its failure shown in `out`, then `done`.
function button(label: string, out: HTMLElement, f: () => Promise<unknown>, done: () => void): HTMLButtonElement {
  const b = h('button', { type: 'button' }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    clear(out);
    try {
      await f();
      done();
    } catch (e) {
      append(out, notice((e as Error).message));
    }
    b.disabled = false;
  });
  return b;
}

async function section(title: string, load: () => Promise<Node>): Promise<HTMLElement> {
  let body: Node;
  try {
    body = await load();
  } catch (e) {
    body = notice(e instanceof ApiError && e.status === 403 ? title + ': ' + e.message : (e as Error).message);
  }
  return h('section', {}, h('h2', {}, title), body);
}

export class MembersPage implements Page {
  title = 'Members';
  private main!: HTMLElement;

  async render(main: HTMLElement): Promise<void> {
    this.main = main;
    const out = h('div');
    const role = roleSelect('role');
    const invite = h('form', { class: 'inline', 'aria-label': 'Invite' }, field('Role', role),
                     h('button', { type: 'submit' }, 'Create invitation'));
    invite.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(out);
      try {
        const inv = await call('invitation_create', { role: role.value });
        const link = location.origin + '/#invite=' + inv.invitation;
        append(out, h('div', { class: 'notice ok', role: 'status' }, 'Invitation link (shown once): ',
                      h('input', { readonly: true, value: link, 'aria-label': 'Invitation link', class: 'mono' })));
        await this.refresh(null);
      } catch (e) {
        append(out, notice((e as Error).message));
      }
    });
    append(main, h('h1', {}, 'Members'), invite, out, h('div', { id: 'members-body' }));
    await this.refresh(null);
  }

  private async refresh(out: HTMLElement | null): Promise<void> {
    const slot = this.main.querySelector('#members-body') as HTMLElement;
    const msg = out || h('div');
    const again = () => void this.refresh(out);
    const members = await section('Members', async () => {
      const r = await call('member_list');
      return table('member-list', ['User', 'Role', ''], r.members.map((m: any) =>
        cells(m.user, m.role, button('Remove', msg, () => call('member_remove', { user: m.user }), again))));
    });
    const invitations = await section('Invitations', async () => {
      const r = await call('invitation_list');
      return table('invitation-list', ['Id', 'Role', 'State', 'Expires', ''], r.invitations.map((i: any) =>
        cells(String(i.id), i.role, i.state, when(i.expires_at),
              i.state === 'pending' ? button('Revoke', msg, () => call('invitation_revoke', { id: i.id }), again)
                                    : '')));
    });
    clear(slot);
    append(slot, msg, members, invitations);
  }
}

export class TokensPage implements Page {
  title = 'Tokens';

  async render(main: HTMLElement): Promise<void> {
    const out = h('div');
    const slot = h('div');
    const name = h('input', { name: 'name', required: true, maxlength: 64 });
    const role = roleSelect('role');
    const form = h('form', { class: 'inline', 'aria-label': 'New token' }, field('Name', name), field('Role', role),
                   h('button', { type: 'submit' }, 'Create token'));
    const load = async () => {
      const tokens = await section('API tokens', async () => {
        const r = await call('token_list');
        return table('token-list', ['Name', 'Org', 'Role', 'Created', ''], r.tokens.map((t: any) =>
          cells(t.name, t.org || 'every org', t.role || '', when(t.created_at),
                button('Revoke', out, () => call('token_revoke', { id: t.id }), () => void load()))));
      });
      const sessions = await section('Browser sessions', async () => {
        const r = await call('session_list');
        return table('session-list', ['Signed in', 'From', 'Browser', ''], r.sessions.map((s: any) =>
          cells(when(s.created_at), s.ip || '', (s.user_agent || '').slice(0, 60),
                button('Sign out', out, () => call('session_revoke', { id: s.id }), () => void load()))));
      });
      clear(slot);
      append(slot, tokens, sessions);
    };
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(out);
      try {
        const t = await call('token_create', { name: name.value, role: role.value, org: undefined });
        append(out, h('div', { class: 'notice ok', role: 'status' }, 'Token (shown once): ',
                      h('input', { readonly: true, value: t.token, 'aria-label': 'New token', class: 'mono' })));
        name.value = '';
        await load();
      } catch (e) {
        append(out, notice((e as Error).message));
      }
    });
    append(main, h('h1', {}, 'Tokens and sessions'), form, out, slot);
    await load();
  }
}

export class AuditPage implements Page {
  title = 'Audit log';

  async render(main: HTMLElement): Promise<void> {
    const actor = h('input', { name: 'actor', placeholder: 'user:NAME' });
    const action = h('input', { name: 'action', placeholder: 'sandbox_create' });
    const filters = h('form', { class: 'inline', 'aria-label': 'Filter' }, field('Actor', actor),
                      field('Action', action), h('button', { type: 'submit' }, 'Filter'));
    const verifyOut = h('div', { id: 'verify-result', role: 'status' });
    const verify = h('button', { type: 'button', id: 'verify' }, 'Verify the chain');
    verify.addEventListener('click', async () => {
      clear(verifyOut);
      try {
        const r = await call('audit_verify');
        for (const [name, rep] of Object.entries<any>(r)) {
          const label = name === 'audit_log' ? 'Audit log' : 'History';
          append(verifyOut, notice(`${label}: ${rep.ok ? 'intact' : 'BROKEN'}, ${rep.rows} rows` +
                                   (rep.head ? `, head #${rep.head.id} ${rep.head.hash}` : '') +
                                   (rep.first_broken ? ', first broken row ' + JSON.stringify(rep.first_broken) : ''),
                                   rep.ok ? 'ok' : 'error'));
        }
      } catch (e) {
        append(verifyOut, notice((e as Error).message));
      }
    });
    const slot = h('div');
    const load = async () => {
      const input: Record<string, unknown> = { limit: 200 };
      if (actor.value.trim()) input.actor = actor.value.trim();
      if (action.value.trim()) input.action = action.value.trim();
      const records = await section('Records', async () => {
        const r = await call('audit_list', input);
        return table('audit-list', ['Id', 'Time', 'Actor', 'Action', 'Outcome'], r.records.map((x: any) =>
          cells(String(x.id), new Date(x.time).toLocaleString(), x.actor, x.action, x.outcome)));
      });
      clear(slot);
      append(slot, records);
    };
    filters.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void load();
    });
    append(main, h('div', { class: 'page-head' }, h('h1', {}, 'Audit log'), verify), verifyOut, filters, slot);
    await load();
  }
}

export const REVEAL_MS = 30000;

export class SecretsPage implements Page {
  title = 'Secrets';
  private timers: number[] = [];

  async render(main: HTMLElement): Promise<void> {
    const out = h('div');
    const list = await section('Secrets', async () => {
      const r = await call('secret_list');
      if (r.secrets.length === 0) return h('p', { class: 'muted' }, 'No secrets in this org.');
      return table('secret-list', ['Name', 'Version', 'Approved hosts', 'Value'], r.secrets.map((s: any) => {
        const value = h('span', { class: 'mono' }, '••••••');
        const reveal = h('button', { type: 'button', 'aria-label': 'Reveal ' + s.name }, 'Reveal');
        reveal.addEventListener('click', async () => {
          clear(out);
          try {
            const v = await call('secret_get', { name: s.name });
            clear(value);
            append(value, v.value !== undefined ? v.value : '(binary, ' + v.value_base64.length + ' base64 chars)');
            reveal.disabled = true;
            this.timers.push(window.setTimeout(() => {
              clear(value);
              append(value, '••••••');
              reveal.disabled = false;
            }, REVEAL_MS));
          } catch (e) {
            append(out, notice((e as Error).message));
          }
        });
        return cells(s.name, String(s.version), (s.hosts || []).join(', '), h('span', {}, value, ' ', reveal));
      }));
    });
    append(main, h('h1', {}, 'Secrets'), out, list);
  }

  dispose(): void {
    for (const t of this.timers) window.clearTimeout(t);
  }
}
