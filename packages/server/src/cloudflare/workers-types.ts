// The few workerd APIs the Durable Object host uses, typed here so the package needs no Workers type package (and
// a user's own worker keeps whichever one it has). Names follow Cloudflare's: DurableObjectState, SqlStorage.

export interface SqlStorageCursor<Row> extends Iterable<Row> {
  toArray(): Row[];
  one(): Row;
}

export interface SqlStorage {
  exec<Row = Record<string, SqlValue>>(query: string, ...bindings: SqlValue[]): SqlStorageCursor<Row>;
}

export type SqlValue = string | number | null | ArrayBuffer | Uint8Array;

export interface DurableObjectStorage {
  readonly sql: SqlStorage;
  /** Runs `fn` in one SQLite transaction: all of it commits or none of it. */
  transactionSync<T>(fn: () => T): T;
  /** Resolves once every write so far is durable. */
  sync(): Promise<void>;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number): Promise<void>;
  deleteAlarm(): Promise<void>;
}

/** A server-side socket of the WebSocket Hibernation API. */
export interface HibernatableWebSocket {
  send(data: ArrayBuffer | Uint8Array | string): void;
  close(code?: number, reason?: string): void;
  accept(): void;
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
  readonly readyState: number;
}

export interface DurableObjectId {
  toString(): string;
  readonly name?: string;
}

export interface DurableObjectState {
  readonly id: DurableObjectId;
  readonly storage: DurableObjectStorage;
  acceptWebSocket(ws: HibernatableWebSocket, tags?: string[]): void;
  getWebSockets(tag?: string): HibernatableWebSocket[];
  /** Holds other events back until `fn` settles (used for the first load after a wake). */
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
  waitUntil(promise: Promise<unknown>): void;
}

export interface DurableObjectStub {
  fetch(request: Request): Promise<Response>;
}

export interface DurableObjectNamespace {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
}

/** `new WebSocketPair()`: a client end to return in a 101 response, a server end to accept. */
export interface WebSocketPairConstructor {
  new (): { 0: HibernatableWebSocket; 1: HibernatableWebSocket };
}

/** What workerd adds to ResponseInit: the client end of a WebSocket pair. */
export interface UpgradeResponseInit extends ResponseInit {
  webSocket: HibernatableWebSocket;
}
