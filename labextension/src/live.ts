/**
 * Follows one workflow live: the websocket stream first, polling when it cannot connect.
 *
 * On every (re)connect the server sends the whole snapshot (``hello``), so nothing done while
 * the panel was closed or disconnected is missed, and the feed fetches the stored events the
 * stream did not carry (``stored``); events after it update the timeline and trigger a
 * snapshot refresh. When the socket keeps failing, the snapshot is polled while the
 * socket is retried with exponential backoff.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { BccApi } from './api';
import type { StreamSnapshot, WorkflowEvent, WorkflowSnapshot } from './types';
import { backoffDelay, TIMELINE_LIMIT } from './view';

/**
 * ``live``: the stream is open; ``polling``: it cannot connect, the snapshot is polled;
 * ``stored``: the server is there but no engine drives this workflow in it (stopped here, or
 * run by the CLI), so there is no live stream: its stored state is polled; ``offline``: the
 * server cannot be reached.
 */
export type ConnectionMode = 'live' | 'polling' | 'stored' | 'offline';

/** How many failed socket attempts before polling starts. */
const POLL_AFTER_FAILURES = 2;
const POLL_INTERVAL_MS = 2000;
/** How often a workflow no engine drives here is offered the stream again (it may be resumed). */
const STORED_RETRY_MS = 15000;

export class WorkflowFeed {
  private socket: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: number | null = null;
  private pollTimer: number | null = null;
  private refreshTimer: number | null = null;
  private disposed = false;
  private polling = false;
  private ended = false;
  private _mode: ConnectionMode = 'offline';
  private _snapshot: Signal<this, WorkflowSnapshot> = new Signal(this);
  private _events: Signal<this, WorkflowEvent[]> = new Signal(this);
  private _stored: Signal<this, WorkflowEvent[]> = new Signal(this);
  private backfilling = false;
  private backfillAgain = false;
  /** Every stored event up to this seq was fetched since the last connect (when
   *  ``fetchedAll``): a poll then asks only for newer ones, not the newest 200 again. */
  private fetchedUpTo = 0;
  private fetchedAll = false;
  private _modeChanged: Signal<this, ConnectionMode> = new Signal(this);

  constructor(
    private readonly api: BccApi,
    readonly workflowId: string
  ) {}

  /** A fresh snapshot (stream hello/resync, a refresh after events, a poll). */
  get snapshot(): ISignal<this, WorkflowSnapshot> {
    return this._snapshot;
  }

  /** D4 events as they arrive on the stream. */
  get events(): ISignal<this, WorkflowEvent[]> {
    return this._events;
  }

  /**
   * Stored events (``GET /events``, the newest ones): what happened before the stream
   * connected (a page reloaded mid-run, a panel opened late) or while it was down. Fetched at
   * every (re)connect and every poll; the same events the stream sends, with the same ``seq``.
   */
  get stored(): ISignal<this, WorkflowEvent[]> {
    return this._stored;
  }

  get modeChanged(): ISignal<this, ConnectionMode> {
    return this._modeChanged;
  }

  get mode(): ConnectionMode {
    return this._mode;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Fetch the snapshot now, then open the stream. */
  start(): void {
    void this.refresh();
    this.connect();
  }

  /** Fetch the snapshot over REST and publish it. */
  async refresh(): Promise<void> {
    try {
      const snapshot = await this.api.workflow(this.workflowId);
      if (!this.disposed) {
        if (this.polling) {
          this.setMode(this.ended ? 'stored' : 'polling');
        }
        this._snapshot.emit(snapshot);
      }
    } catch {
      if (!this.disposed && this.polling) {
        this.setMode('offline');
      }
    }
  }

  /** Fetch the stored events (the newest after a connect, then those after the last one
   *  fetched) and publish them on ``stored``; one fetch at a time, and a request made during
   *  one runs once it ended, so no connect goes without its fetch. */
  async backfill(): Promise<void> {
    if (this.backfilling) {
      this.backfillAgain = true;
      return;
    }
    this.backfilling = true;
    try {
      do {
        this.backfillAgain = false;
        try {
          const after = this.fetchedAll ? this.fetchedUpTo : 0;
          const answer = await this.api.events(this.workflowId, after, TIMELINE_LIMIT);
          this.fetchedAll = true;
          for (const event of answer.events) {
            this.fetchedUpTo = Math.max(this.fetchedUpTo, event.seq);
          }
          if (!this.disposed && answer.events.length > 0) {
            this._stored.emit(answer.events);
          }
        } catch {
          // the stream and the snapshot still work; the next connect or poll tries again
        }
      } while (this.backfillAgain && !this.disposed);
    } finally {
      this.backfilling = false;
    }
  }

  dispose(): void {
    if (this.disposed) {
      return;
    }
    this.disposed = true;
    this.clearTimers();
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close();
      this.socket = null;
    }
    Signal.clearData(this);
  }

  private setMode(mode: ConnectionMode): void {
    if (mode !== this._mode) {
      this._mode = mode;
      this._modeChanged.emit(mode);
    }
  }

  private clearTimers(): void {
    for (const timer of [this.retryTimer, this.pollTimer, this.refreshTimer]) {
      if (timer !== null) {
        window.clearTimeout(timer);
      }
    }
    this.retryTimer = this.pollTimer = this.refreshTimer = null;
  }

  private connect(): void {
    if (this.disposed) {
      return;
    }
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.api.streamUrl(this.workflowId));
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.ended = false;
      this.attempt = 0;
      this.stopPolling();
      this.setMode('live');
      this.fetchedAll = false; // what happened while it was closed: the newest again
      void this.backfill();
    };
    socket.onmessage = message => this.receive(message.data);
    socket.onclose = () => {
      this.socket = null;
      if (this.disposed) {
        return;
      }
      if (!opened) {
        this.attempt += 1;
      }
      if (this.ended) {
        this.followStored();
        return;
      }
      this.scheduleReconnect();
    };
  }

  private receive(data: unknown): void {
    if (typeof data !== 'string') {
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (!message || typeof message !== 'object') {
      return;
    }
    if (Array.isArray(message)) {
      // the events of one commit, or those queued while this page read, in order
      const events = message.filter(
        (event): event is WorkflowEvent => !!event && typeof event === 'object'
      );
      if (events.length) {
        this._events.emit(events);
        this.scheduleRefresh();
      }
      return;
    }
    if ((message as StreamSnapshot).type === 'snapshot') {
      if ((message as StreamSnapshot).reason === 'closed') {
        this.ended = true; // no engine drives it here (any more): the socket closes next
      }
      this._snapshot.emit((message as StreamSnapshot).snapshot);
      return;
    }
    this._events.emit([message as WorkflowEvent]);
    this.scheduleRefresh();
  }

  /** Coalesce the snapshot refreshes a burst of events asks for. */
  private scheduleRefresh(): void {
    if (this.refreshTimer !== null) {
      return;
    }
    this.refreshTimer = window.setTimeout(() => {
      this.refreshTimer = null;
      void this.refresh();
    }, 150);
  }

  private scheduleReconnect(): void {
    if (this.disposed || this.retryTimer !== null) {
      return;
    }
    if (this.attempt >= POLL_AFTER_FAILURES) {
      this.startPolling();
    } else {
      this.setMode('offline');
    }
    const delay = backoffDelay(this.attempt, Math.random());
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, delay);
  }

  /** The stream ended on purpose (``closed``): poll the stored state, and offer the stream
   *  again now and then, in case the workflow is resumed here. */
  private followStored(): void {
    if (this.disposed || this.retryTimer !== null) {
      return;
    }
    this.startPolling();
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, STORED_RETRY_MS);
  }

  private startPolling(): void {
    if (this.polling) {
      this.setMode(this.ended ? 'stored' : 'polling');
      return;
    }
    this.polling = true;
    this.setMode(this.ended ? 'stored' : 'polling');
    const tick = async (): Promise<void> => {
      this.pollTimer = null;
      await Promise.all([this.refresh(), this.backfill()]);
      if (!this.disposed && this.polling) {
        this.pollTimer = window.setTimeout(() => void tick(), POLL_INTERVAL_MS);
      }
    };
    this.pollTimer = window.setTimeout(() => void tick(), 0);
  }

  private stopPolling(): void {
    this.polling = false;
    if (this.pollTimer !== null) {
      window.clearTimeout(this.pollTimer);
      this.pollTimer = null;
    }
  }
}
