// "Open preview": a one-time link (sandbox_port_open) to what the sandbox serves on a port, opened in a new tab
// that learns nothing of this page (rel=noopener noreferrer: no window.opener, no Referer).
import { call } from './api';
import { h, append, clear, field, notice } from './dom';

// The daemon's answer is a preview origin for this port: http(s) and a host "<port>-...". Anything else is not
// opened (a javascript: or another site's link would run with this page's click).
export function previewUrl(url: unknown, port: number): URL | null {
  if (typeof url !== 'string') return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  return u.hostname.startsWith(port + '-') ? u : null;
}

async function openPreview(sandbox: string, port: number, out: HTMLElement): Promise<void> {
  clear(out);
  try {
    const r = await call('sandbox_port_open', { sandbox, port });
    const url = previewUrl(r.url, port);
    if (url === null) {
      append(out, notice('The preview link the server returned is not a preview of port ' + port + '; not opened'));
      return;
    }
    const link = () => h('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer' });
    const a = link();
    document.body.appendChild(a);
    a.click();
    a.remove();
    // A popup blocker may have stopped the tab (the click came after an await): the link stays here to open by hand.
    const ok = notice('Preview of port ' + port + ' opened in a new tab. If it did not open, ', 'ok');
    const manual = link();
    manual.id = 'preview-link';
    append(manual, 'open the preview');
    append(ok, manual, '.');
    append(out, ok);
  } catch (e) {
    append(out, notice((e as Error).message));
  }
}

// A published port's button.
export function previewButton(sandbox: string, port: number, out: HTMLElement): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'link', 'aria-label': 'Open preview of port ' + port },
              'Open preview');
  b.addEventListener('click', () => void openPreview(sandbox, port, out));
  return b;
}

// Any port the sandbox's app listens on (a dev server needs no published port to be previewed).
export function previewForm(sandbox: string, out: HTMLElement): HTMLFormElement {
  const port = h('input', { name: 'preview-port', type: 'number', min: 1, max: 65535, required: true,
                            id: 'preview-port' });
  const form = h('form', { class: 'inline', 'aria-label': 'Preview a port' }, field('Port', port),
                 h('button', { type: 'submit', id: 'open-preview' }, 'Open preview'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void openPreview(sandbox, Number(port.value), out);
  });
  return form;
}
