// Live changes: the daemon's event stream (GET /api/v1/events, Server-Sent Events named "sandbox") when it has
// one, else a poll every 3 s. Either way the subscriber hears "something changed" and reloads what it shows.

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

export class LiveChanges {
  private source: EventSource | null = null;
  private timer: number | undefined;

  // `changed` is called with the event, or with null for a poll tick.
  constructor(private changed: (event: SandboxEvent | null) => void) {
    this.source = new EventSource('/api/v1/events');
    this.source.addEventListener('sandbox', (ev) => {
      try {
        this.changed(JSON.parse((ev as MessageEvent).data));
      } catch {
        this.changed(null);
      }
    });
    this.source.onerror = () => {
      // CLOSED: the stream is refused (a daemon without one answers 404); the browser retries any other failure.
      if (this.source?.readyState === EventSource.CLOSED) {
        this.source = null;
        this.poll();
      }
    };
  }

  get polling(): boolean {
    return this.timer !== undefined;
  }

  private poll(): void {
    if (this.timer !== undefined) return;
    this.timer = window.setInterval(() => this.changed(null), POLL_MS);
  }

  close(): void {
    this.source?.close();
    this.source = null;
    if (this.timer !== undefined) window.clearInterval(this.timer);
    this.timer = undefined;
  }
}
