// Live changes: the daemon's event stream (GET /api/v1/events, Server-Sent Events named "sandbox"), one per browser
// rather than one per tab, else a poll every 3 s. Either way a subscriber hears "something changed" and reloads what
// it shows.
//
// One per browser: a browser opens at most 6 connections to a host, and the daemon a few streams per account. The
// tab that holds the Web Lock "isb-events" opens the stream and hands each event to the other tabs over the
// BroadcastChannel of that name; when it closes (or its pages no longer listen), the next tab that listens takes the
// lock and the stream, resuming after the last id any tab heard. Where a page has no Web Locks (served over plain
// HTTP beyond loopback), each tab has its own stream, closed while the tab is hidden.
//
// "Something changed" with no event (null): a `reset` (ids the daemon does not know: it restarted, or the ring
// dropped events), and a stream that reconnected (events may have passed meanwhile).

export interface SandboxEvent {
  id?: number;
  type: string;
  org?: string;
  sandbox?: string;
  name?: string;
  state?: string;
  at?: string;
}

export const POLL_MS = 3000;
const NAME = 'isb-events';

type Listener = (event: SandboxEvent | null) => void;

// What one tab passes to the others: an event (or null for "reload"), and the stream's last id.
interface Relayed {
  event: SandboxEvent | null;
  lastId: string;
}

class SharedStream {
  private listeners = new Set<Listener>();
  private channel: BroadcastChannel | null = null;
  private source: EventSource | null = null;
  private timer: number | undefined;
  private lastId = '';
  private giveUpLock: (() => void) | null = null;
  private lockWait: AbortController | null = null;

  // Whether this tab holds the stream (for the browser test: exactly one tab does).
  get leading(): boolean {
    return this.source !== null || this.timer !== undefined;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.start();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  private start(): void {
    if (typeof BroadcastChannel !== 'undefined') {
      this.channel = new BroadcastChannel(NAME);
      this.channel.onmessage = (m: MessageEvent<Relayed>) => {
        if (m.data.lastId) this.lastId = m.data.lastId;
        this.deliver(m.data.event);
      };
    }
    if (this.channel && navigator.locks) {
      const wait = new AbortController();
      this.lockWait = wait;
      navigator.locks.request(NAME, { signal: wait.signal }, () => {
        // Granted after this tab's pages stopped listening (the grant and stop() crossed): held no longer.
        if (this.lockWait !== wait) return undefined;
        return new Promise<void>((release) => {
          this.lockWait = null;
          this.giveUpLock = release;
          this.open();
        });
      }).catch(() => {
        // the wait was given up (stop): nothing held
      });
    } else {
      document.addEventListener('visibilitychange', this.onVisibility);
      if (document.visibilityState !== 'hidden') this.open();
    }
  }

  private stop(): void {
    this.lockWait?.abort();
    this.lockWait = null;
    this.closeStream();
    this.giveUpLock?.();
    this.giveUpLock = null;
    this.channel?.close();
    this.channel = null;
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  private onVisibility = (): void => {
    if (document.visibilityState === 'hidden') {
      this.closeStream();
    } else if (!this.leading) {
      this.open();
      this.deliver(null);  // what happened while hidden
    }
  };

  private open(): void {
    const url = '/api/v1/events' + (this.lastId ? '?last_event_id=' + encodeURIComponent(this.lastId) : '');
    const source = new EventSource(url);
    this.source = source;
    let opened = false;
    source.addEventListener('open', () => {
      if (opened) this.relay(null);
      opened = true;
    });
    source.addEventListener('sandbox', (ev) => {
      const m = ev as MessageEvent;
      this.lastId = m.lastEventId;
      try {
        this.relay(JSON.parse(m.data));
      } catch {
        this.relay(null);
      }
    });
    source.addEventListener('reset', (ev) => {
      this.lastId = (ev as MessageEvent).lastEventId;
      this.relay(null);
    });
    source.onerror = () => {
      // CLOSED: the stream is refused (404 where the daemon's tool policy hides the list, 429 past the limits); the
      // browser retries any other failure by itself.
      if (source.readyState === EventSource.CLOSED && this.source === source) {
        this.source = null;
        this.timer = window.setInterval(() => this.relay(null), POLL_MS);
      }
    };
  }

  private closeStream(): void {
    this.source?.close();
    this.source = null;
    if (this.timer !== undefined) window.clearInterval(this.timer);
    this.timer = undefined;
  }

  private relay(event: SandboxEvent | null): void {
    this.channel?.postMessage({ event, lastId: this.lastId } satisfies Relayed);
    this.deliver(event);
  }

  private deliver(event: SandboxEvent | null): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

const shared = new SharedStream();

// For the browser test: whether this tab holds the browser's one stream.
(window as any).__isbEventsLeading = () => shared.leading;

// One page's interest in the stream; close() when the page is left.
export class LiveChanges {
  private unsubscribe: (() => void) | null;

  // `changed` is called with the event, or with null for "reload" (a poll tick, a reset, a reconnect).
  constructor(changed: (event: SandboxEvent | null) => void) {
    this.unsubscribe = shared.subscribe(changed);
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
