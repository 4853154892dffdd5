// A sandbox's terminal: xterm.js over the WebSocket at /api/v1/sandboxes/<id>/terminal (binary frames both ways,
// JSON text frames for the session, resizes and the end). Paste is typed input; a connection lost while the shell
// ran reconnects to a new shell (a shell's session ends with its connection), a few times; one the server ended on
// purpose (the shell exited, an error frame such as the idle limit, a normal close) does not, and Reconnect opens a
// new shell by hand.
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { currentOrg } from './api';
import { h, append, clear } from './dom';

const MAX_RETRIES = 3;
const RETRY_MS = 1000;
const INPUT_CHUNK = 64 * 1024;  // the daemon's kMaxTerminalInputBytes

export class TerminalView {
  readonly element: HTMLElement;
  private term: Terminal;
  private fit = new FitAddon();
  private socket: WebSocket | null = null;
  private ready = false;
  private ended = false;
  private status: HTMLElement;
  private reconnect: HTMLButtonElement;
  private observer: ResizeObserver;
  private retries = 0;
  private retryTimer: number | undefined;

  constructor(private sandbox: string) {
    this.status = h('span', { class: 'term-status', role: 'status' }, 'connecting');
    this.reconnect = h('button', { type: 'button', onclick: () => this.connect() }, 'Reconnect');
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

  connect(): void {
    window.clearTimeout(this.retryTimer);
    this.socket?.close();
    this.ready = false;
    this.ended = false;
    this.reconnect.hidden = true;
    this.setStatus('connecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = new URLSearchParams({ org: currentOrg(), rows: String(this.term.rows), cols: String(this.term.cols) });
    const ws = new WebSocket(`${scheme}//${location.host}/api/v1/sandboxes/${encodeURIComponent(this.sandbox)}` +
                             `/terminal?${q}`);
    ws.binaryType = 'arraybuffer';
    this.socket = ws;
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') {
        this.term.write(new Uint8Array(ev.data as ArrayBuffer));
        return;
      }
      const msg = JSON.parse(ev.data);
      if (msg.type === 'session') {
        this.ready = true;
        this.retries = 0;
        this.setStatus('connected');
        this.term.focus();
      } else if (msg.type === 'exit') {
        this.ended = true;
        this.setStatus('the shell exited (' + msg.exit_code + ')');
      } else if (msg.type === 'error') {
        // The server ended it (the idle limit, a revoked session): say why, and open no new shell by itself.
        this.ended = true;
        this.setStatus(typeof msg.message === 'string' && msg.message ? msg.message : 'the terminal ended');
      }
    };
    ws.onclose = (ev) => {
      if (this.socket !== ws) return;
      const wasReady = this.ready;
      this.ready = false;
      this.reconnect.hidden = false;
      if (this.ended) return;
      if (ev.code === 1000) {  // a normal close is the server's choice, not a lost connection
        this.setStatus('the terminal ended');
        return;
      }
      // A connection lost while the shell ran (a network change, a daemon restart): a new shell, a few times.
      if (wasReady && this.retries < MAX_RETRIES) {
        this.retries++;
        this.setStatus('disconnected; reconnecting');
        this.retryTimer = window.setTimeout(() => this.connect(), RETRY_MS);
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

  dispose(): void {
    window.clearTimeout(this.retryTimer);
    this.observer.disconnect();
    const ws = this.socket;
    this.socket = null;
    ws?.close();
    this.term.dispose();
  }
}
