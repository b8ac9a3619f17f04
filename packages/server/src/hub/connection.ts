// One client socket in a room: its grant, its limits (size, rate, pre-load queue, backpressure) and the order
// in which its messages are handled. The protocol itself lives in room.ts.

import type { CairnError } from '@cairn/core';
import { actorFor } from '@cairn/core/protocol';
import type { Grant } from '../auth.js';
import type { Logger } from '../log.js';
import { CloseCode } from '../wire.js';
import { type Limits, TokenBucket } from './limits.js';
import type { HubMetrics } from './metrics.js';

/** What a host hands the hub for each socket: a WebSocket, a Worker's socket, a test double. */
export interface HubSocket {
  send(data: Uint8Array): void;
  close(code: number, reason: string): void;
  /** Bytes accepted by `send` but not yet written to the network, if the transport knows. */
  readonly bufferedAmount?: number;
}

/** What the hub hands back to the host for each socket. */
export interface HubConnection {
  /** A binary frame from the client. */
  receive(data: Uint8Array): void;
  /** Closes the connection from the host's side (e.g. a text frame: `CloseCode.BadMessage`). */
  close(code: number, reason: string): void;
  /** The socket is gone (the host saw it close); idempotent. */
  closed(): void;
}

export interface ConnectionContext {
  limits: Limits;
  metrics: HubMetrics;
  logger: Logger;
  /** Handles one message of a started connection. */
  handle(conn: Connection, data: Uint8Array): void;
  /** The connection ended (closed by either side). */
  ended(conn: Connection): void;
}

let nextId = 1;

/** Longest close reason a WebSocket allows is 123 bytes. */
function clip(reason: string): string {
  let out = reason;
  while (new TextEncoder().encode(out).byteLength > 123) out = `${out.slice(0, -2)}…`;
  return out;
}

export class Connection implements HubConnection {
  readonly id = nextId++;
  readonly grant: Grant;
  /** The transaction origin's actor for edits from this connection (`user:<sub>`). */
  readonly actor: string;
  readonly canWrite: boolean;
  /** Awareness client ids this connection speaks for (cleared from the room when it closes). */
  readonly awarenessClients = new Set<number>();
  /** Set once a write from this connection was refused: every later acknowledgement request reports it. */
  refusal: CairnError | null = null;
  pendingAcks = 0;
  /** Bytes of this connection's updates still waiting in its plan for missing dependencies (see Limits). */
  pendingUpdateBytes = 0;
  lastSentAt = 0;
  /** Until the room has loaded: messages wait here, in order. */
  private queue: Uint8Array[] | null = [];
  private queuedBytes = 0;
  private isClosed = false;
  private readonly messageRate: TokenBucket;
  private readonly byteRate: TokenBucket;
  private expiry: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly socket: HubSocket,
    grant: Grant,
    private readonly ctx: ConnectionContext,
  ) {
    this.grant = grant;
    this.actor = actorFor(grant.sub, 'user');
    this.canWrite = grant.role !== 'read';
    const { limits } = ctx;
    this.messageRate = new TokenBucket(limits.messagesPerSecond, limits.messageBurst);
    this.byteRate = new TokenBucket(limits.bytesPerSecond, limits.byteBurst);
    if (grant.expiresAt !== null) {
      const ms = Math.max(0, Math.min(grant.expiresAt - Date.now(), 2 ** 31 - 1));
      this.expiry = setTimeout(() => this.close(CloseCode.Unauthorized, 'Token expired.'), ms);
      this.expiry.unref?.();
    }
  }

  get started(): boolean {
    return this.queue === null && !this.isClosed;
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  receive(data: Uint8Array): void {
    if (this.isClosed) return;
    const { limits } = this.ctx;
    if (data.byteLength > limits.maxMessageBytes) {
      this.close(
        CloseCode.MessageTooLarge,
        `Message of ${data.byteLength} bytes; the limit is ${limits.maxMessageBytes}.`,
      );
      return;
    }
    if (!this.messageRate.take(1)) {
      this.close(CloseCode.RateLimited, `More than ${limits.messagesPerSecond} messages/s.`);
      return;
    }
    if (!this.byteRate.take(data.byteLength)) {
      this.close(CloseCode.RateLimited, `More than ${limits.bytesPerSecond} bytes/s.`);
      return;
    }
    if (this.queue) {
      if (
        this.queue.length >= limits.maxQueuedMessages ||
        this.queuedBytes + data.byteLength > limits.maxQueuedBytes
      ) {
        this.close(
          CloseCode.RateLimited,
          `More than ${limits.maxQueuedMessages} messages or ${limits.maxQueuedBytes} bytes before the plan loaded.`,
        );
        return;
      }
      this.queue.push(data);
      this.queuedBytes += data.byteLength;
      return;
    }
    this.ctx.handle(this, data);
  }

  /** The room has loaded: `greet` sends the server's first messages, then queued messages are handled in order. */
  start(greet: () => void): void {
    if (this.isClosed || !this.queue) return;
    const queued = this.queue;
    this.queue = null;
    this.queuedBytes = 0;
    greet();
    for (const data of queued) {
      if (this.isClosed) return;
      this.ctx.handle(this, data);
    }
  }

  send(data: Uint8Array): void {
    if (this.isClosed) return;
    const buffered = this.socket.bufferedAmount ?? 0;
    if (buffered > this.ctx.limits.maxBufferedBytes) {
      this.close(CloseCode.Unavailable, `The client reads too slowly (${buffered} bytes waiting).`);
      return;
    }
    this.lastSentAt = Date.now();
    try {
      this.socket.send(data);
    } catch (error) {
      this.ctx.logger.warn('send failed; closing the connection', { conn: this.id, error: String(error) });
      this.closed();
    }
  }

  close(code: number, reason: string): void {
    if (this.isClosed) return;
    this.ctx.metrics.closedTotal.inc({ code: String(code) });
    if (code !== CloseCode.GoingAway) {
      this.ctx.logger.info('closing connection', { conn: this.id, plan: this.grant.planId, code, reason });
    }
    try {
      this.socket.close(code, clip(reason));
    } catch {
      // The socket is already gone: nothing to tell.
    }
    this.closed();
  }

  closed(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.queue = null;
    if (this.expiry) clearTimeout(this.expiry);
    this.ctx.ended(this);
  }
}
