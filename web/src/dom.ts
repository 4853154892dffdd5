// Building the page without markup strings: every text goes in as text, never as HTML.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]):
    HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// A labelled input: the label names it for screen readers and clicks.
let nextId = 0;
export function field(label: string, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
                      hint?: string): HTMLElement {
  if (!input.id) input.id = 'f' + ++nextId;
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input,
           hint ? h('small', {}, hint) : null);
}

export function when(seconds: number | undefined): string {
  if (!seconds) return '';
  return new Date(seconds * 1000).toLocaleString();
}

export function bytes(n: number | undefined): string {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}

// A message line for a page: errors in role=alert so they are announced.
export function notice(text: string, kind: 'error' | 'ok' = 'error'): HTMLElement {
  return h('p', { class: 'notice ' + kind, role: kind === 'error' ? 'alert' : 'status' }, text);
}
