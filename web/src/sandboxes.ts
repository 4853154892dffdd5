// The sandboxes list (live) and the create form. No form here offers privileged, raw id mappings or bind mounts.
import { call, ApiError } from './api';
import { h, append, clear, field, when, bytes, notice } from './dom';
import { LiveChanges } from './events';
import { Page } from './page';

export const LISTED_MARK = 'isb-sandboxes-listed';

export function egressText(egress: unknown): string {
  if (egress === undefined || egress === null || egress === 'none') return 'none';
  if (egress === 'open') return 'open';
  if (Array.isArray(egress)) return egress.join('\n');
  if (typeof egress === 'object' && egress && Array.isArray((egress as any).allow)) {
    return (egress as any).allow.join('\n');
  }
  return JSON.stringify(egress);
}

// The egress a textarea says: "none", "open", or one host[:port] a line.
export function egressValue(text: string): string | string[] {
  const t = text.trim();
  if (t === '' || t === 'none') return 'none';
  if (t === 'open') return 'open';
  return t.split(/[\s,]+/).filter((s) => s !== '');
}

export class SandboxListPage implements Page {
  title = 'Sandboxes';
  private live: LiveChanges | null = null;
  private left = false;  // disposed: a render still loading opens no stream
  private body!: HTMLTableSectionElement;
  private status!: HTMLElement;

  async render(main: HTMLElement): Promise<void> {
    this.body = h('tbody');
    this.status = h('p', { class: 'muted', role: 'status' });
    append(main,
           h('div', { class: 'page-head' }, h('h1', {}, 'Sandboxes'),
             h('a', { class: 'button primary', href: '#/sandboxes/new' }, 'New sandbox')),
           h('table', { class: 'list', id: 'sandbox-list' },
             h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'State'),
                                h('th', { scope: 'col', class: 'wide' }, 'CPUs'),
                                h('th', { scope: 'col', class: 'wide' }, 'Memory'),
                                h('th', { scope: 'col', class: 'wide' }, 'Expires'))),
             this.body),
           this.status);
    await this.load();
    if (!this.left) this.live = new LiveChanges(() => void this.load());
  }

  private async load(): Promise<void> {
    try {
      const r = await call('sandbox_list');
      clear(this.body);
      for (const s of r.sandboxes) {
        append(this.body, h('tr', { 'data-id': s.id },
                            h('td', {}, h('a', { href: '#/sandboxes/' + s.id }, s.name || s.id),
                              h('div', { class: 'muted mono' }, s.id)),
                            h('td', {}, h('span', { class: 'state ' + s.state }, s.state)),
                            h('td', { class: 'wide' }, String(s.spec.cpus)),
                            h('td', { class: 'wide' }, bytes(s.spec.mem_limit)),
                            h('td', { class: 'wide' }, when(s.expires_at))));
      }
      clear(this.status);
      append(this.status, r.sandboxes.length === 0 ? 'No sandboxes yet.' : r.sandboxes.length + ' sandboxes');
      // When the list first shows, on the browser's clock from the navigation's start (the README's first load).
      if (performance.getEntriesByName(LISTED_MARK).length === 0) performance.mark(LISTED_MARK);
    } catch (e) {
      clear(this.status);
      append(this.status, notice((e as Error).message));
    }
  }

  dispose(): void {
    this.left = true;
    this.live?.close();
  }
}

export class SandboxCreatePage implements Page {
  title = 'New sandbox';

  render(main: HTMLElement): void {
    const name = h('input', { name: 'name', autocomplete: 'off', maxlength: 63 });
    const image = h('input', { name: 'image', placeholder: 'the host\'s default view', list: 'image-choices',
                               autocomplete: 'off' });
    const choices = h('datalist', { id: 'image-choices' });
    // The org's images as suggestions; without them (no image tools for this caller) the field still takes any.
    call('image_list').then((r) => append(choices, ...r.images.map((i: any) => h('option', { value: i.name }))),
                            () => {});
    const cpus = h('input', { name: 'cpus', type: 'number', step: '0.1', min: '0.1', value: '1' });
    const mem = h('input', { name: 'mem_limit', value: '512M' });
    const disk = h('input', { name: 'disk', value: '2G' });
    const pids = h('input', { name: 'pids', type: 'number', min: '16', value: '512' });
    const egress = h('textarea', { name: 'egress', rows: 3 });
    egress.value = 'none';
    const expires = h('input', { name: 'expires', type: 'number', min: '1', value: '24' });
    const idle = h('input', { name: 'idle', type: 'number', min: '1', value: '120' });
    const out = h('div');
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Create');
    const form = h('form', { class: 'form', 'aria-label': 'New sandbox' },
                   h('h1', {}, 'New sandbox'),
                   field('Name', name, 'Optional: letters, digits and inner hyphens'),
                   field('Image', image, 'Optional: an image of the org (see Images), or a directory on the host ' +
                         'used as the root filesystem'), choices,
                   h('fieldset', {}, h('legend', {}, 'Limits'),
                     field('CPUs', cpus), field('Memory', mem), field('Disk', disk), field('Processes', pids)),
                   field('Egress', egress, '"none", "open", or one host[:port] a line (*.example.com for names below)'),
                   h('fieldset', {}, h('legend', {}, 'Lifetime'),
                     field('Expires after (hours)', expires), field('Idle timeout (minutes)', idle)),
                   submit, out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      submit.disabled = true;
      clear(out);
      const spec: Record<string, unknown> = {
        cpus: Number(cpus.value),
        mem_limit: mem.value.trim(),
        disk: disk.value.trim(),
        pids: Number(pids.value),
        egress: egressValue(egress.value),
        expires: Math.round(Number(expires.value) * 3600),
        idle_timeout: Math.round(Number(idle.value) * 60),
      };
      if (name.value.trim()) spec.name = name.value.trim();
      if (image.value.trim()) spec.image = image.value.trim();
      try {
        const s = await call('sandbox_create', spec);
        location.hash = '#/sandboxes/' + s.id;
      } catch (e) {
        append(out, notice(e instanceof ApiError ? e.message : String(e)));
        submit.disabled = false;
      }
    });
    append(main, form);
    name.focus();
  }
}
