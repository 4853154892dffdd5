// Platform admins: the orgs and their quotas (org_list, org_get, org_create, org_quota_set).
import { call } from './api';
import { h, append, clear, field, notice } from './dom';
import { Page } from './page';

const QUOTA_FIELDS: [string, string][] = [['cpus', 'CPUs'], ['memory', 'Memory (bytes)'], ['disk', 'Disk (bytes)'],
                                          ['pids', 'Processes'], ['instances', 'Sandboxes']];

export class OrgsPage implements Page {
  title = 'Orgs';
  private slot = h('div');
  private out = h('div');

  async render(main: HTMLElement): Promise<void> {
    const name = h('input', { name: 'org-name', required: true, maxlength: 64 });
    const create = h('form', { class: 'inline', 'aria-label': 'New org' }, field('Name', name),
                     h('button', { type: 'submit' }, 'Create org'));
    create.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(this.out);
      try {
        await call('org_create', { name: name.value.trim() });
        name.value = '';
        await this.load();
      } catch (e) {
        append(this.out, notice((e as Error).message));
      }
    });
    append(main, h('h1', {}, 'Orgs and quotas'), create, this.out, this.slot);
    await this.load();
  }

  private async load(): Promise<void> {
    clear(this.slot);
    try {
      const r = await call('org_list');
      for (const o of r.orgs) append(this.slot, await this.orgSection(o.name));
    } catch (e) {
      append(this.slot, notice((e as Error).message));
    }
  }

  // One org's quota as a form: an empty field is no limit.
  private async orgSection(org: string): Promise<HTMLElement> {
    const got = await call('org_get', {}, org);
    const inputs = QUOTA_FIELDS.map(([key, label]) => {
      const value = got.quota?.[key];
      const input = h('input', { name: key, type: 'number', min: '0', step: key === 'cpus' ? '0.1' : '1',
                                 value: value === null || value === undefined ? '' : String(value),
                                 placeholder: 'no limit' });
      return { key, input, element: field(label, input) };
    });
    const out = h('div');
    const form = h('form', { class: 'inline', 'aria-label': 'Quota of ' + org }, ...inputs.map((i) => i.element),
                   h('button', { type: 'submit' }, 'Save quota'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(out);
      const quota: Record<string, number> = {};
      for (const { key, input } of inputs) if (input.value !== '') quota[key] = Number(input.value);
      try {
        await call('org_quota_set', quota, org);
        append(out, notice('Saved', 'ok'));
      } catch (e) {
        append(out, notice((e as Error).message));
      }
    });
    return h('section', {}, h('h2', {}, org), form);
  }
}
