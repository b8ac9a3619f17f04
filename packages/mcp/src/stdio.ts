// The stdio transport of `cairn mcp`: one JSON-RPC message per line, each at most `maxMessageBytes`. The SDK's own
// transport ends the session (and so the process) when a line outgrows its 10 MB buffer; here a line too long, not
// JSON or not JSON-RPC is answered with a JSON-RPC error that says what is valid, and the session goes on.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';

/** 4 MiB: far above any tool call Cairn takes, far below what would strain the process. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** How much of a refused line's start and end is kept to find its id. */
const EDGE_BYTES = 1024;

type RequestId = string | number | null;

export interface LineTransportOptions {
  /** Longest message (one line, without its newline) answered; longer ones get an error. Default 4 MiB. */
  maxMessageBytes?: number;
}

export class LineTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;

  readonly maxMessageBytes: number;
  private chunks: Buffer[] = [];
  private size = 0;
  /** The line being skipped because it is too long: its first and last bytes and its length so far. */
  private skipping: { head: Buffer; tail: Buffer; bytes: number } | null = null;
  private closed = false;

  constructor(
    private readonly stdin: NodeJS.ReadableStream,
    private readonly stdout: NodeJS.WritableStream,
    options: LineTransportOptions = {},
  ) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  async start(): Promise<void> {
    this.stdin.on('data', this.onData);
    this.stdin.on('end', this.onEnd);
    this.stdin.on('error', this.onStreamError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('end', this.onEnd);
    this.stdin.off('error', this.onStreamError);
    this.chunks = [];
    this.skipping = null;
    this.onclose?.();
  }

  private readonly onData = (data: Buffer | string): void => {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      this.take(chunk.subarray(start, newline === -1 ? chunk.length : newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  };

  private readonly onEnd = (): void => {
    void this.close();
  };

  private readonly onStreamError = (error: Error): void => {
    this.onerror?.(error);
  };

  private take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.skipping) {
      this.skipping.bytes += part.length;
      this.skipping.tail = lastBytes(Buffer.concat([this.skipping.tail, part]));
      return;
    }
    if (this.size + part.length <= this.maxMessageBytes) {
      this.chunks.push(part);
      this.size += part.length;
      return;
    }
    // Too long: only its edges are kept (to find its id), the rest is dropped as it arrives.
    const sofar = Buffer.concat([...this.chunks, part]);
    this.skipping = {
      head: Buffer.from(sofar.subarray(0, EDGE_BYTES)),
      tail: lastBytes(sofar),
      bytes: sofar.length,
    };
    this.chunks = [];
    this.size = 0;
  }

  private endLine(): void {
    if (this.skipping) {
      const { head, tail, bytes } = this.skipping;
      this.skipping = null;
      this.refuse(
        idNear(head.toString('utf8'), tail.toString('utf8')),
        ErrorCode.InvalidRequest,
        `Message too large: ${bytes} bytes, and a message (one line) may be at most ${this.maxMessageBytes} bytes.`,
        { limitBytes: this.maxMessageBytes, bytes },
      );
      return;
    }
    const line = Buffer.concat(this.chunks).toString('utf8').replace(/\r$/, '');
    this.chunks = [];
    this.size = 0;
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      this.refuse(null, ErrorCode.ParseError, 'Parse error: each line must be one JSON-RPC message in JSON.');
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(json);
    if (!parsed.success) {
      this.refuse(
        idOf(json),
        ErrorCode.InvalidRequest,
        'Invalid Request: a message is a JSON-RPC 2.0 object: a request { "jsonrpc": "2.0", "id": a string or ' +
          'an integer, "method": a string, "params"?: an object }, a notification (no id) or a response.',
      );
      return;
    }
    this.onmessage?.(parsed.data);
  }

  private refuse(id: RequestId, code: number, message: string, data?: Record<string, unknown>): void {
    const error = { code, message, ...(data ? { data } : {}) };
    // A JSON-RPC error whose id could not be read carries null, which the SDK's message type does not allow.
    this.send({ jsonrpc: '2.0', id, error } as unknown as JSONRPCMessage).catch((e: Error) =>
      this.onerror?.(e),
    );
  }
}

function lastBytes(buffer: Buffer): Buffer {
  return Buffer.from(buffer.subarray(Math.max(0, buffer.length - EDGE_BYTES)));
}

/** The id of a parsed message that is not valid JSON-RPC, if it has a usable one. */
function idOf(json: unknown): RequestId {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return null;
  const id = (json as { id?: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
}

const ID_VALUE = String.raw`(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")`;
/** `"id"` as the first member, or the second after `"jsonrpc"` (most clients write it so). */
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}`);
/** `"id"` as the last member (the TypeScript SDK writes it so): then it is a member of the outer object. */
const ID_LAST = new RegExp(String.raw`[,{]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/** The id of a line too long to parse, read from its edges where clients put it; null if not there. */
function idNear(head: string, tail: string): RequestId {
  const match = ID_FIRST.exec(head) ?? ID_LAST.exec(tail.replace(/\r$/, ''));
  if (!match) return null;
  try {
    return idOf({ id: JSON.parse(match[1]!) });
  } catch {
    return null;
  }
}
