// The org's OCI images: the list with a pull form (its progress streamed), and one image's page (config, layers,
// the sandboxes made from it) with Remove behind a confirmation. The server decides who may pull or remove.
import { call, callStream } from './api';
import { h, append, clear, field, when, bytes, notice } from './dom';
import { Page } from './page';

// An image's page link: names hold '/', ':' and '@'.
export function imageHref(name: string): string {
  return '#/images/' + encodeURIComponent(name);
}

// A digest shortened on screen ("sha256:0123456789ab…"), read out whole and whole in its tooltip.
function digestText(digest: string): HTMLElement {
  const short = digest.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, '$1…');
  return h('span', { class: 'mono', title: digest }, h('span', { 'aria-hidden': 'true' }, short),
           h('span', { class: 'sr-only' }, digest));
}

// Unix milliseconds as local time.
function whenMs(ms: number | undefined): string {
  return ms ? when(ms / 1000) : '';
}

// A removal's outcome, shown by the list it returns to.
let removedNotice: string | null = null;

// The bytes of a pull so far, from its progress events (one per layer's step, each with that layer's done and total).
class PullProgress {
  private layers = new Map<string, { done: number; total: number }>();
  readonly bar = h('progress', { id: 'pull-progress', max: '1', value: '0', 'aria-label': 'Pull progress',
                                 hidden: true });
  readonly status = h('span', { id: 'pull-status', role: 'status' });

  reset(): void {
    this.layers.clear();
    this.bar.hidden = true;
    clear(this.status);
  }

  update(p: { phase: string; layer?: string; done: number; total: number }): void {
    if (p.phase === 'layer' && p.layer) this.layers.set(p.layer, { done: p.done, total: p.total });
    let done = 0;
    let total = 0;
    for (const l of this.layers.values()) {
      done += l.done;
      total += l.total;
    }
    clear(this.status);
    if (p.phase === 'manifest') append(this.status, 'Fetching the manifest…');
    else if (p.phase === 'done') append(this.status, 'Recording the image…');
    else append(this.status, `${this.layers.size} layers: ${bytes(done)} of ${bytes(total)}`);
    if (total > 0) {
      this.bar.hidden = false;
      this.bar.max = total;
      this.bar.value = done;
    }
  }
}

export class ImageListPage implements Page {
  title = 'Images';
  private left = false;
  private slot = h('div');
  private out = h('div');

  async render(main: HTMLElement): Promise<void> {
    if (removedNotice) append(this.out, notice(removedNotice, 'ok'));
    removedNotice = null;
    append(main, h('h1', {}, 'Images'), this.pullForm(), this.out, this.slot);
    await this.load();
  }

  dispose(): void {
    this.left = true;
  }

  private pullForm(): HTMLFormElement {
    const ref = h('input', { name: 'ref', required: true, maxlength: 512, autocomplete: 'off', class: 'mono',
                             placeholder: 'python:3.12' });
    const secret = h('input', { name: 'auth_secret', maxlength: 128, autocomplete: 'off', list: 'secret-choices' });
    const secrets = h('datalist', { id: 'secret-choices' });
    // The org's secret names as suggestions, for a caller who may list them.
    call('secret_list').then((r) => append(secrets, ...r.secrets.map((x: any) => h('option', { value: x.name }))),
                             () => {});
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Pull');
    const progress = new PullProgress();
    const form = h('form', { class: 'inline', 'aria-label': 'Pull an image' },
                   field('Reference', ref, 'The layers for this host\'s platform are fetched'),
                   field('Registry login secret', secret, 'Optional: an org secret holding USER:PASSWORD'), secrets,
                   submit, h('div', { class: 'pull-progress' }, progress.bar, progress.status));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      submit.disabled = true;
      form.setAttribute('aria-busy', 'true');
      clear(this.out);
      progress.reset();
      append(progress.status, 'Pulling…');
      const input: Record<string, string> = { ref: ref.value.trim() };
      if (secret.value.trim()) input.auth_secret = secret.value.trim();
      try {
        const got = await callStream('image_pull', input, (event, data) => {
          if (event === 'progress') progress.update(JSON.parse(data.data));
        });
        progress.reset();
        append(this.out, notice('Pulled ' + got.name + ' (' + got.id + ')', 'ok'));
        ref.value = '';
        if (!this.left) await this.load();
      } catch (e) {
        progress.reset();
        append(this.out, notice((e as Error).message));
      }
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    });
    return form;
  }

  private async load(): Promise<void> {
    let body: Node;
    try {
      const r = await call('image_list');
      body = r.images.length === 0 ? h('p', { class: 'muted' }, 'No images in this org.') : imageTable(r.images);
    } catch (e) {
      body = notice((e as Error).message);
    }
    clear(this.slot);
    append(this.slot, body);
  }
}

function imageTable(images: any[]): HTMLTableElement {
  const heads: [string, boolean][] = [['Name', false], ['Digest', false], ['Size', false], ['Layers', true],
                                      ['Source', true], ['Added', true]];
  return h('table', { class: 'list', id: 'image-list' },
           h('thead', {}, h('tr', {}, ...heads.map(([t, wide]) =>
             h('th', { scope: 'col', class: wide ? 'wide' : undefined }, t)))),
           h('tbody', {}, ...images.map((i) => h('tr', { 'data-digest': i.digest },
             h('td', { class: 'breakable' }, h('a', { href: imageHref(i.name) }, i.name)),
             h('td', {}, digestText(i.digest)),
             h('td', {}, bytes(i.size)),
             h('td', { class: 'wide' }, String(i.layers)),
             h('td', { class: 'wide' }, i.source || ''),
             h('td', { class: 'wide' }, whenMs(i.created_at))))));
}

function facts(rows: [string, string | Node][]): HTMLElement {
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function words(list: string[] | null | undefined): string {
  return list && list.length > 0 ? list.join(' ') : '(none)';
}

export class ImagePage implements Page {
  title = 'Image';

  async render(main: HTMLElement, params: string[]): Promise<void> {
    const name = params[0];
    this.title = name;
    document.title = name + ' · isb';
    const out = h('div');
    append(main, h('p', {}, h('a', { href: '#/images' }, '← Images')));
    let image: any;
    try {
      image = await call('image_inspect', { image: name });
    } catch (e) {
      append(main, h('h1', { class: 'breakable' }, name), notice((e as Error).message));
      return;
    }
    const c = image.config || {};
    const env: string[] = (c.env || []).map((e: string) => e.split('=')[0]);
    const usedBy: string[] = image.used_by || [];
    append(main,
           h('div', { class: 'page-head' }, h('h1', { class: 'breakable' }, image.name), this.removeButton(image, out)),
           out,
           h('section', { 'aria-labelledby': 'h-image' }, h('h2', { id: 'h-image' }, 'Image'), facts([
             ['Id', h('span', { class: 'mono' }, image.id)],
             ['Digest', h('span', { class: 'mono breakable', id: 'image-digest' }, image.digest)],
             ['Source', image.source || ''],
             ['Added', whenMs(image.created_at)],
             ['Size', bytes(image.size) + ' (' + bytes(image.unpacked_size) + ' unpacked)'],
             ['Platform', [c.os, c.architecture].filter((x) => x).join('/')],
             ['Used by', usedBy.length === 0 ? 'no sandbox' : h('span', { id: 'image-used-by' }, ...usedBy.flatMap(
               (s, i) => [i > 0 ? ', ' : '', h('a', { href: '#/sandboxes/' + encodeURIComponent(s) }, s)]))],
           ])),
           h('section', { 'aria-labelledby': 'h-config' }, h('h2', { id: 'h-config' }, 'Config'),
             h('div', { id: 'image-config' }, facts([
               ['Entrypoint', h('span', { class: 'mono' }, words(c.entrypoint))],
               ['Cmd', h('span', { class: 'mono' }, words(c.cmd))],
               ['Working dir', h('span', { class: 'mono' }, c.working_dir || '(none)')],
               ['User', h('span', { class: 'mono' }, c.user || '(none)')],
               ['Env names', h('span', { class: 'mono' }, env.length > 0 ? env.join(', ') : '(none)')],
             ]))),
           h('section', { 'aria-labelledby': 'h-layers' }, h('h2', { id: 'h-layers' }, 'Layers'),
             h('table', { class: 'list', id: 'layer-list' },
               h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Digest'),
                                  h('th', { scope: 'col' }, 'Size'),
                                  h('th', { scope: 'col', class: 'wide' }, 'Media type'))),
               h('tbody', {}, ...(image.layer_list || []).map((l: any, i: number) => h('tr', {},
                 h('td', {}, String(i + 1)), h('td', {}, digestText(l.digest)), h('td', {}, bytes(l.size)),
                 h('td', { class: 'wide mono' }, l.media_type)))))));
  }

  // Remove, asked again in a modal dialog (Escape or Cancel keeps the image).
  private removeButton(image: any, out: HTMLElement): HTMLElement {
    const open = h('button', { type: 'button', id: 'remove-image' }, 'Remove');
    const confirm = h('button', { type: 'button', class: 'danger', id: 'confirm-remove' }, 'Remove image');
    const cancel = h('button', { type: 'button', id: 'cancel-remove' }, 'Cancel');
    const dialog = h('dialog', { 'aria-labelledby': 'remove-title', 'aria-describedby': 'remove-text' },
                     h('h2', { id: 'remove-title' }, 'Remove this image?'),
                     h('p', { id: 'remove-text', class: 'breakable' }, image.name +
                       ' leaves this org; layers no other image uses are deleted from the host.'),
                     h('div', { class: 'actions' }, confirm, cancel));
    open.addEventListener('click', () => {
      dialog.showModal();
      cancel.focus();
    });
    cancel.addEventListener('click', () => dialog.close());
    confirm.addEventListener('click', async () => {
      confirm.disabled = true;
      clear(out);
      try {
        const r = await call('image_remove', { image: image.name });
        removedNotice = 'Removed ' + r.removed;
        dialog.close();
        location.hash = '#/images';
      } catch (e) {
        dialog.close();
        append(out, notice((e as Error).message));
        open.focus();
      }
      confirm.disabled = false;
    });
    return h('div', {}, open, dialog);
  }
}
