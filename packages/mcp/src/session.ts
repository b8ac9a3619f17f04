// The rules of an MCP session that the SDK's Server leaves unchecked, enforced between the transport and it:
// nothing but initialize and ping before initialize has been answered, one initialize, no request id reused while
// its request is in progress, and the params of the methods we serve in the shape they take. Each refusal is a
// JSON-RPC error of one sentence saying what is valid, and the server never sees the request.
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

type Phase = 'new' | 'initializing' | 'ready';

/** Wraps `inner` so that what reaches the server (through the returned transport) follows the session rules. */
export function guardSession(inner: Transport): Transport {
  return new SessionGuard(inner);
}

class SessionGuard implements Transport {
  onmessage?: Transport['onmessage'];
  onerror?: Transport['onerror'];
  onclose?: Transport['onclose'];
  private phase: Phase = 'new';
  private initializeKey: string | null = null;
  /** Requests the server has not answered yet, by id. */
  private readonly inFlight = new Set<string>();

  constructor(private readonly inner: Transport) {
    inner.onmessage = (message, extra) => this.receive(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.onclose?.();
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const key = keyOf(message.id as RequestId);
      this.inFlight.delete(key);
      // A failed initialize (bad params) may be tried again; an answered one opens the session.
      if (key === this.initializeKey) {
        this.phase = isJSONRPCResultResponse(message) ? 'ready' : 'new';
        this.initializeKey = null;
      }
    }
    return this.inner.send(message, options);
  }

  private receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    if (!isJSONRPCRequest(message)) {
      // A cancelled request is never answered (the SDK drops its result): its id is free again.
      if ('method' in message && message.method === 'notifications/cancelled') {
        const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
        if (typeof id === 'string' || typeof id === 'number') this.inFlight.delete(keyOf(id));
      }
      this.onmessage?.(message, extra);
      return;
    }
    const { id, method } = message;
    const key = keyOf(id);
    const refusal = this.refusal(key, method, message.params);
    if (refusal) {
      this.inner.send({ jsonrpc: '2.0', id, error: refusal }).catch((error: Error) => this.onerror?.(error));
      return;
    }
    if (method === 'initialize') {
      this.phase = 'initializing';
      this.initializeKey = key;
    }
    this.inFlight.add(key);
    this.onmessage?.(message, extra);
  }

  private refusal(key: string, method: string, params: unknown): { code: number; message: string } | null {
    const invalid = (message: string) => ({ code: ErrorCode.InvalidRequest, message });
    if (this.inFlight.has(key)) {
      return invalid(
        `Request id ${key.slice(2)} is already in use by a request in progress; give each request a new id.`,
      );
    }
    if (method === 'initialize' && this.phase !== 'new') {
      return invalid('The session is already initialized: initialize is sent once, as the first request.');
    }
    if (method !== 'initialize' && method !== 'ping' && this.phase !== 'ready') {
      return invalid(
        `Not initialized: until initialize has been answered only initialize and ping are accepted, not ${quote(method)}.`,
      );
    }
    const problem = paramsProblem(method, params);
    return problem ? { code: ErrorCode.InvalidParams, message: problem } : null;
  }
}

/** Ids 7 and "7" are two ids. */
function keyOf(id: RequestId): string {
  return `${typeof id === 'number' ? 'n' : 's'}:${typeof id === 'number' ? id : JSON.stringify(id)}`;
}

function quote(method: string): string {
  return JSON.stringify(method.length > 80 ? `${method.slice(0, 80)}…` : method);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * What is wrong with the params of a method this server serves, in one sentence, or null. The SDK would answer
 * these with -32603 and its schema's whole report.
 */
export function paramsProblem(method: string, params: unknown): string | null {
  switch (method) {
    case 'tools/call': {
      const shape = 'params are { "name": a tool\'s name, "arguments"?: an object of its parameters }';
      if (!isObject(params)) return `Invalid params: ${shape}, not ${describe(params)}.`;
      if (typeof params.name !== 'string') {
        return `Invalid params: "name" must be a tool's name (a string, see tools/list), not ${describe(params.name)}.`;
      }
      if (params.arguments !== undefined && !isObject(params.arguments)) {
        return `Invalid params: "arguments" must be an object of the tool's parameters (or left out), not ${describe(params.arguments)}.`;
      }
      return null;
    }
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      if (!isObject(params) || typeof params.uri !== 'string') {
        return `Invalid params: ${method} takes { "uri": a string, e.g. the one resources/list gives }.`;
      }
      return null;
    default:
      return null;
  }
}
