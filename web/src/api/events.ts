// The ledger's live stream (`/events`): one WebSocket shared by every view,
// reconnected with backoff after the daemon restarts, resuming after the
// last seq seen so that no event is missed or shown twice.
import type { Schemas } from "./types";

export type LedgerEvent = Schemas["Envelope"];
export type LinkState = "connecting" | "live" | "down";

type Listener = (e: LedgerEvent) => void;
type StateListener = (s: LinkState) => void;

export class EventStream {
  private ws: WebSocket | null = null;
  private lastSeq: number | null = null;
  private listeners = new Set<Listener>();
  private stateListeners = new Set<StateListener>();
  private retryMs = 500;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  state: LinkState = "connecting";

  constructor(private readonly url: string) {}

  /** Starts streaming new events (and, with `since`, those after it). */
  start(since: number | null = null): void {
    this.lastSeq = since;
    this.closed = false;
    this.connect();
  }

  stop(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close();
    this.ws = null;
  }

  subscribe(f: Listener): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  onState(f: StateListener): () => void {
    this.stateListeners.add(f);
    f(this.state);
    return () => this.stateListeners.delete(f);
  }

  private setState(s: LinkState): void {
    this.state = s;
    for (const f of this.stateListeners) f(s);
  }

  private connect(): void {
    this.setState("connecting");
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      this.retryMs = 500;
      if (this.lastSeq !== null) ws.send(JSON.stringify({ since: this.lastSeq }));
      this.setState("live");
    };
    ws.onmessage = (m) => {
      let e: LedgerEvent;
      try {
        e = JSON.parse(String(m.data)) as LedgerEvent;
      } catch {
        return;
      }
      if (typeof e.seq !== "number") return;
      if (this.lastSeq !== null && e.seq <= this.lastSeq) return;
      this.lastSeq = e.seq;
      for (const f of this.listeners) f(e);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.closed) return;
      this.setState("down");
      this.timer = setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 10_000);
    };
  }
}

export function eventsUrl(loc: Location): string {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/events`;
}
