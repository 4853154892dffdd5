// "Open preview": a one-time link (sandbox_port_open) to what the sandbox serves on a port, opened in a new tab
// that learns nothing of this page (rel=noopener noreferrer: no window.opener, no Referer).
import { call } from './api';
import { h, append, clear, field, notice } from './dom';

async function openPreview(sandbox: string, port: number, out: HTMLElement): Promise<void> {
  clear(out);
  try {
    const r = await call('sandbox_port_open', { sandbox, port });
    const a = h('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer' });
    document.body.appendChild(a);
    a.click();
    a.remove();
    append(out, notice('Preview of port ' + port + ' opened in a new tab', 'ok'));
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
