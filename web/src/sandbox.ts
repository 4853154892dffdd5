// One sandbox: its state, limits and usage, lifecycle buttons, live events, the egress list edited in place,
// published ports, files (browse, upload, download) and a terminal.
import { call } from './api';
import { h, append, clear, field, when, bytes, notice } from './dom';
import { LiveChanges, SandboxEvent } from './events';
import { Page } from './page';
import { egressText, egressValue } from './sandboxes';
import { TerminalView } from './terminal';
import { previewButton, previewForm } from './preview_link';
import { drawUsage, UsageSample } from './usage_chart';

const USAGE_EVERY_MS = 10000;

function base64Of(data: ArrayBuffer): string {
  const bytesIn = new Uint8Array(data);
  let text = '';
  for (let i = 0; i < bytesIn.length; i += 0x8000) {
    text += String.fromCharCode(...bytesIn.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

function bytesOf(b64: string): Uint8Array<ArrayBuffer> {
  const text = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(text.length));
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export class SandboxPage implements Page {
  title = 'Sandbox';
  private id = '';
  private live: LiveChanges | null = null;
  private left = false;  // disposed: a render still loading opens no stream
  private terminal: TerminalView | null = null;
  private summary = h('div');
  private events = h('ol', { class: 'events', id: 'sandbox-events' });
  private egress = h('textarea', { name: 'egress', rows: 4, id: 'egress-list' });
  private egressOut = h('div');
  private ports = h('ul', { class: 'plain' });
  private previewOut = h('div');
  private usage = h('div', { class: 'usage-charts', id: 'usage-charts' });
  private usageTimer = 0;
  private limits = { cpus: 1, mem_limit: 0, pids: 0 };
  private cwd = '/root';
  private files = h('ul', { class: 'files', id: 'file-list' });
  private filesOut = h('div');
  private pathInput = h('input', { name: 'path', value: '/root' });

  async render(main: HTMLElement, params: string[]): Promise<void> {
    this.id = params[0];
    const termSlot = h('div');
    const openTerm = h('button', { type: 'button', id: 'open-terminal' }, 'Open terminal');
    openTerm.addEventListener('click', () => {
      this.terminal?.dispose();
      clear(termSlot);
      this.terminal = new TerminalView(this.id);
      append(termSlot, this.terminal.element);
    });
    const saveEgress = h('button', { type: 'submit' }, 'Save egress');
    const egressForm = h('form', { 'aria-label': 'Egress' }, field('Hosts it may reach', this.egress,
                         'One host[:port] a line; applies to new connections at once'), saveEgress, this.egressOut);
    egressForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.saveEgress();
    });
    const upload = h('input', { type: 'file', name: 'upload', id: 'upload' });
    upload.addEventListener('change', () => void this.upload(upload));
    const go = h('form', { class: 'inline', 'aria-label': 'Browse files' }, field('Directory', this.pathInput),
                 h('button', { type: 'submit' }, 'List'));
    go.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.browse(this.pathInput.value);
    });
    append(main, this.summary,
           h('section', { 'aria-labelledby': 'h-term' }, h('h2', { id: 'h-term' }, 'Terminal'), openTerm, termSlot),
           h('div', { class: 'columns' },
             h('section', { 'aria-labelledby': 'h-egress' }, h('h2', { id: 'h-egress' }, 'Egress'), egressForm),
             h('section', { 'aria-labelledby': 'h-ports' }, h('h2', { id: 'h-ports' }, 'Published ports'), this.ports,
               previewForm(this.id, this.previewOut), this.previewOut)),
           h('section', { 'aria-labelledby': 'h-usage' }, h('h2', { id: 'h-usage' }, 'Usage, last hour'), this.usage),
           h('section', { 'aria-labelledby': 'h-files' }, h('h2', { id: 'h-files' }, 'Files'), go,
             field('Upload into this directory', upload), this.files, this.filesOut),
           h('section', { 'aria-labelledby': 'h-events' }, h('h2', { id: 'h-events' }, 'Events'), this.events));
    await this.load(true);
    await this.browse(this.cwd);
    await this.loadUsage();
    if (this.left) return;
    this.live = new LiveChanges((ev) => this.changed(ev));
    this.usageTimer = window.setInterval(() => void this.loadUsage(), USAGE_EVERY_MS);
  }

  // The last hour's samples (sandbox_usage, a point every 2 s), each series drawn against the sandbox's limit.
  private async loadUsage(): Promise<void> {
    try {
      const r = await call('sandbox_usage', { sandbox: this.id });
      drawUsage(this.usage, r.samples as UsageSample[], this.limits);
    } catch (e) {
      clear(this.usage);
      append(this.usage, notice((e as Error).message));
    }
  }

  private changed(ev: SandboxEvent | null): void {
    if (ev && ev.sandbox !== this.id) return;
    void this.load(false);
  }

  // The sandbox's history (history_query): what happened to it, who asked and why.
  private async loadEvents(): Promise<void> {
    try {
      const r = await call('history_query', { sandbox: this.id, limit: 100 });
      clear(this.events);
      for (const e of r.events) {
        append(this.events, h('li', {}, new Date(e.time).toLocaleString() + ' ' + e.event +
                              (e.actor ? ' by ' + e.actor : '') + (e.reason ? ' (' + e.reason + ')' : '')));
      }
    } catch (e) {
      clear(this.events);
      append(this.events, h('li', {}, notice((e as Error).message)));
    }
  }

  private async load(first: boolean): Promise<void> {
    let s: any;
    try {
      s = await call('sandbox_get', { sandbox: this.id });
    } catch (e) {
      clear(this.summary);
      append(this.summary, h('h1', {}, this.id), notice((e as Error).message));
      return;
    }
    this.title = s.name || s.id;
    document.title = this.title + ' · isb';
    const action = (label: string, tool: string, input: object = {}) => {
      const b = h('button', { type: 'button' }, label);
      b.addEventListener('click', async () => {
        b.disabled = true;
        try {
          await call(tool, { sandbox: this.id, ...input });
          if (tool === 'sandbox_remove') location.hash = '#/sandboxes';
          else await this.load(false);
        } catch (e) {
          append(this.summary, notice((e as Error).message));
        }
        b.disabled = false;
      });
      return b;
    };
    const u = s.usage || {};
    clear(this.summary);
    append(this.summary,
           h('div', { class: 'page-head' }, h('h1', {}, s.name || s.id),
             h('span', { class: 'state ' + s.state, id: 'sandbox-state' }, s.state)),
           h('p', { class: 'muted mono' }, s.id),
           h('div', { class: 'actions' },
             s.state === 'running' ? action('Stop', 'sandbox_stop') : action('Start', 'sandbox_start'),
             action('Extend 1 h', 'sandbox_extend', { by: 3600 }), action('Remove', 'sandbox_remove')),
           h('dl', { class: 'facts' },
             h('dt', {}, 'CPUs'), h('dd', {}, String(s.spec.cpus)),
             h('dt', {}, 'Memory'), h('dd', {}, bytes(s.spec.mem_limit) + (u.memory_bytes !== undefined
                                                     ? ' (using ' + bytes(u.memory_bytes) + ')' : '')),
             h('dt', {}, 'Disk'), h('dd', {}, bytes(s.spec.disk)),
             h('dt', {}, 'Processes'), h('dd', {}, String(s.spec.pids) + (u.pids !== undefined
                                                         ? ' (running ' + u.pids + ')' : '')),
             h('dt', {}, 'CPU time'), h('dd', {}, u.cpu_usec !== undefined ? (u.cpu_usec / 1e6).toFixed(2) + ' s' : ''),
             h('dt', {}, 'Created'), h('dd', {}, when(s.created_at)),
             h('dt', {}, 'Expires'), h('dd', {}, when(s.expires_at))));
    this.limits = { cpus: s.spec.cpus, mem_limit: s.spec.mem_limit, pids: s.spec.pids };
    if (first) this.egress.value = egressText(s.spec.egress);
    await this.loadEvents();
    clear(this.ports);
    for (const p of s.spec.ports || []) {
      append(this.ports, h('li', {}, `${p.host_address || '127.0.0.2'}:${p.host_port} → ${p.sandbox_port} `,
                           previewButton(this.id, p.sandbox_port, this.previewOut)));
    }
    if (!(s.spec.ports || []).length) append(this.ports, h('li', { class: 'muted' }, 'None'));
  }

  private async saveEgress(): Promise<void> {
    clear(this.egressOut);
    try {
      const s = await call('sandbox_egress_set', { sandbox: this.id, egress: egressValue(this.egress.value) });
      this.egress.value = egressText(s.spec.egress);
      append(this.egressOut, notice('Saved', 'ok'));
    } catch (e) {
      append(this.egressOut, notice((e as Error).message));
    }
  }

  private async browse(dir: string): Promise<void> {
    clear(this.filesOut);
    const path = dir.replace(/\/+$/, '') || '/';
    try {
      const r = await call('sandbox_exec', { sandbox: this.id, argv: ['ls', '-1Ap', '--', path], timeout: 20 });
      if (r.exit_code !== 0) throw new Error(r.stderr || 'ls exited with ' + r.exit_code);
      this.cwd = path;
      this.pathInput.value = path;
      clear(this.files);
      const child = (name: string) => (path === '/' ? '' : path) + '/' + name;
      if (path !== '/') {
        const up = h('button', { type: 'button', class: 'link' }, '..');
        up.addEventListener('click', () => void this.browse(path.replace(/\/[^/]*$/, '') || '/'));
        append(this.files, h('li', {}, up));
      }
      for (const line of String(r.stdout).split('\n').filter((l) => l !== '')) {
        const isDir = line.endsWith('/');
        const name = isDir ? line.slice(0, -1) : line;
        const b = h('button', { type: 'button', class: 'link', 'aria-label': (isDir ? 'Open ' : 'Download ') + name },
                    line);
        b.addEventListener('click', () => void (isDir ? this.browse(child(name)) : this.download(child(name))));
        append(this.files, h('li', {}, b));
      }
    } catch (e) {
      append(this.filesOut, notice((e as Error).message));
    }
  }

  private async download(path: string): Promise<void> {
    try {
      const r = await call('sandbox_file_read', { sandbox: this.id, path, encoding: 'base64' });
      const url = URL.createObjectURL(new Blob([bytesOf(r.content_base64)]));
      const a = h('a', { href: url, download: path.split('/').pop() || 'file' });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      append(this.filesOut, notice((e as Error).message));
    }
  }

  private async upload(input: HTMLInputElement): Promise<void> {
    clear(this.filesOut);
    for (const file of Array.from(input.files || [])) {
      try {
        const path = (this.cwd === '/' ? '' : this.cwd) + '/' + file.name;
        await call('sandbox_file_write', { sandbox: this.id, path, content_base64: base64Of(await file.arrayBuffer()) });
        append(this.filesOut, notice('Uploaded ' + path, 'ok'));
      } catch (e) {
        append(this.filesOut, notice(file.name + ': ' + (e as Error).message));
      }
    }
    input.value = '';
    await this.browse(this.cwd);
  }

  dispose(): void {
    this.left = true;
    window.clearInterval(this.usageTimer);
    this.live?.close();
    this.terminal?.dispose();
  }
}
