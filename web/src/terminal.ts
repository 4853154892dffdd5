// A sandbox's terminal: xterm.js over the WebSocket at /api/v1/sandboxes/<id>/terminal (binary frames both ways,
// JSON text frames for the session, resizes and the end). Paste is typed input. A connection lost while the shell
// runs (a network change, a sleeping laptop, a reload) leaves the shell waiting on the server for a while (60 s by
// default): this view attaches to the same session again, a few times, with how many bytes of output it already has,
// so the server sends only what it missed. The session id is kept in sessionStorage (this tab only) so that a reload
// finds its shell when the terminal is opened again. One the server ended on purpose (the shell exited, an error
// frame such as the idle limit, a normal close) is not retried; one taken over by another tab or window waits for
// Reconnect, which takes it back; leaving the view closes the shell. Reconnect opens a new shell once the old one
// has ended.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { currentOrg } from './api';
import { h, append, clear } from './dom';

const MAX_RETRIES = 5;
const RETRY_MS = 1000;  // doubled after each try: 1 + 2 + 4 + 8 + 16 s, within the server's grace period
const INPUT_CHUNK = 64 * 1024;  // the daemon's kMaxTerminalInputBytes
// The daemon's close codes (api/terminal_sessions.h): another connection attached to the session, and a reattach
// that found no session of this caller's.
const CLOSE_POLICY = 1008;
const CLOSE_TAKEN_OVER = 4000;
const CLOSE_NO_SESSION = 4404;

export class TerminalView {
  readonly element: HTMLElement;
  private term: Terminal;
  private fit = new FitAddon();
  private socket: WebSocket | null = null;
  private ready = false;
  private ended = false;
  private lastError = '';  // the last error message of this connection, told again when it closes
  private status: HTMLElement;
  private reconnect: HTMLButtonElement;
  private observer: ResizeObserver;
  private retries = 0;
  private retryTimer: number | undefined;
  // The shell to attach to again (null: the next connection opens a new one), and the bytes of its output shown.
  private session: string | null;
  private seen = 0;
  private readonly storageKey: string;
  // Attaching to a shell remembered from before a reload, not yet reached.
  private restoring: boolean;

  constructor(private sandbox: string) {
    this.storageKey = 'isb-terminal:' + currentOrg() + ':' + sandbox;
    this.session = this.stored();
    this.restoring = this.session !== null;
    this.status = h('span', { class: 'term-status', role: 'status' }, 'connecting');
    this.reconnect = h('button', { type: 'button', onclick: () => {
      this.retries = 0;
      this.connect();
    } }, 'Reconnect');
    this.reconnect.hidden = true;
    const screen = h('div', { class: 'term-screen', 'aria-label': 'Terminal' });
    this.element = h('section', { class: 'terminal', 'aria-label': 'Terminal of ' + sandbox },
                     h('div', { class: 'term-bar' }, this.status, this.reconnect), screen);
    this.term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, convertEol: false });
    this.term.loadAddon(this.fit);
    this.term.open(screen);
    this.fitNow();
    this.term.onData((data) => this.send(new TextEncoder().encode(data)));
    this.term.onResize(({ rows, cols }) => {
      if (this.ready) this.socket?.send(JSON.stringify({ type: 'resize', rows, cols }));
    });
    this.observer = new ResizeObserver(() => this.fitNow());
    this.observer.observe(screen);
    this.connect();
  }

  private fitNow(): void {
    try {
      this.fit.fit();
    } catch {
      // not laid out yet
    }
  }

  private setStatus(text: string): void {
    clear(this.status);
    append(this.status, text);
  }

  // sessionStorage is this tab's alone; a browser that refuses it (a private mode) just reattaches within the page.
  private stored(): string | null {
    try {
      return sessionStorage.getItem(this.storageKey);
    } catch {
      return null;
    }
  }

  private remember(session: string | null): void {
    this.session = session;
    try {
      if (session) sessionStorage.setItem(this.storageKey, session);
      else sessionStorage.removeItem(this.storageKey);
    } catch {
      // kept in this page only
    }
  }

  connect(): void {
    window.clearTimeout(this.retryTimer);
    this.socket?.close();
    this.ready = false;
    this.ended = false;
    this.lastError = '';
    this.reconnect.hidden = true;
    const reattach = this.session;
    this.setStatus(reattach ? 'reattaching' : 'connecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = new URLSearchParams({ org: currentOrg(), rows: String(this.term.rows), cols: String(this.term.cols) });
    if (reattach) {
      q.set('session', reattach);
      q.set('seen', String(this.seen));
    }
    const ws = new WebSocket(`${scheme}//${location.host}/api/v1/sandboxes/${encodeURIComponent(this.sandbox)}` +
                             `/terminal?${q}`);
    ws.binaryType = 'arraybuffer';
    this.socket = ws;
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') {
        const bytes = new Uint8Array(ev.data as ArrayBuffer);
        this.seen += bytes.length;
        this.term.write(bytes);
        return;
      }
      const msg = JSON.parse(ev.data);
      if (msg.type === 'session') {
        // The output that follows starts at `offset`: anything else than what this screen has means the server no
        // longer holds what came between, so the screen starts over from what it does hold.
        const offset = typeof msg.offset === 'number' ? msg.offset : 0;
        if (offset !== this.seen) this.term.reset();
        this.seen = offset;
        this.remember(msg.session);
        this.restoring = false;
        this.ready = true;
        this.retries = 0;
        this.setStatus(reattach ? 'reattached' : 'connected');
        this.term.focus();
      } else if (msg.type === 'exit') {
        this.ended = true;
        this.remember(null);
        this.setStatus('the shell exited (' + msg.exit_code + ')');
      } else if (msg.type === 'error') {
        // Said, and kept for the close that may follow: an error that ends the shell (the idle limit, a revoked
        // session) comes before a close that says so; one about a message (input the shell did not take in time, a
        // resize) leaves the shell and this connection as they are.
        this.lastError = typeof msg.message === 'string' && msg.message ? msg.message : 'the terminal ended';
        this.setStatus(this.lastError);
      }
    };
    ws.onclose = (ev) => {
      if (this.socket !== ws) return;
      this.ready = false;
      this.reconnect.hidden = false;
      if (ev.code === CLOSE_NO_SESSION) {
        this.remember(null);
        this.seen = 0;
        // A shell remembered from before a reload that has ended since: a new one, as opening the terminal asks.
        // (A shell lost after this view had it says why in its error message; Reconnect opens a new one.)
        if (this.restoring) {
          this.restoring = false;
          this.connect();
        }
        return;
      }
      this.restoring = false;
      if (ev.code === CLOSE_TAKEN_OVER) {
        this.setStatus('attached in another tab or window; Reconnect takes it back');
        return;
      }
      if (this.ended) return;
      // A normal close is the server's choice, not a lost connection; a policy close (1008) is the server stopping
      // or the caller's access ending: a reattach would be refused.
      if (ev.code === 1000 || ev.code === CLOSE_POLICY) {
        this.ended = true;
        this.remember(null);
        this.setStatus(this.lastError || ev.reason || 'the terminal ended');
        return;
      }
      // A connection lost while a shell runs (a network change, a daemon restart): attach to it again, a few times.
      if (this.session && this.retries < MAX_RETRIES) {
        const wait = RETRY_MS * 2 ** this.retries;
        this.retries++;
        this.setStatus(`disconnected; reattaching (try ${this.retries} of ${MAX_RETRIES})`);
        this.retryTimer = window.setTimeout(() => this.connect(), wait);
      } else {
        this.setStatus('disconnected');
      }
    };
  }
  // In messages of at most INPUT_CHUNK bytes: a large paste is many messages, none past what the daemon takes.
  private send(bytes: Uint8Array): void {
    if (!this.ready || this.socket?.readyState !== WebSocket.OPEN) return;
    for (let at = 0; at < bytes.length; at += INPUT_CHUNK) this.socket.send(bytes.subarray(at, at + INPUT_CHUNK));
  }

  // Leaving the view ends the shell: a normal close (1000) is the client saying it is done.
  dispose(): void {
    window.clearTimeout(this.retryTimer);
    this.observer.disconnect();
    const ws = this.socket;
    this.socket = null;
    this.remember(null);
    ws?.close(1000);
    this.term.dispose();
  }
}
