// Bounds what a socket makes the server hold in a message it has not finished. `ws` keeps every fragment of a
// message until its last one arrives (up to its maxPayload), whatever the connection may write: a read-only
// socket could hold megabytes for as long as it liked. Counted on the raw socket, ahead of `ws`.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { CloseCode } from './wire.js';

/** Below this, an unfinished message costs too little to time (a pong, a small message split by TCP). */
const TIMED_ABOVE_BYTES = 64 * 1024;
/** Frame headers: a message of exactly the limit is a few bytes more on the wire. */
const FRAMING_BYTES = 1024;
/** After a close for a limit, the peer's close frame is waited for this long, reading nothing meanwhile. */
const CLOSE_GRACE_MS = 1_000;

export interface UnfinishedLimits {
  maxMessageBytes: number;
  maxMessageMs: number;
}

/**
 * Closes `ws` with 4413 once the bytes received since its last complete message pass `maxMessageBytes`, and with
 * 4408 when a message holding more than 64 KiB is still unfinished after `maxMessageMs`. `close` closes the
 * connection (the hub's, so the close is counted); the socket then reads nothing more and is cut after a second.
 */
export function boundUnfinishedMessages(
  ws: WebSocket,
  socket: Duplex,
  limits: UnfinishedLimits,
  close: (code: number, reason: string) => void,
): void {
  let unfinished = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const finished = () => {
    unfinished = 0;
    if (timer) clearTimeout(timer);
    timer = null;
  };
  const stop = (code: number, reason: string) => {
    finished();
    socket.removeListener('data', count);
    close(code, reason);
    socket.pause(); // `ws` buffers nothing more of it
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  };
  // Ahead of `ws`'s own listener: a chunk is counted before its fragments are buffered. A chunk that ends one
  // message and starts the next is counted whole, then reset by the message event: the next message is
  // under-counted by at most that chunk.
  const count = (chunk: Buffer) => {
    unfinished += chunk.byteLength;
    if (unfinished > limits.maxMessageBytes + FRAMING_BYTES) {
      stop(
        CloseCode.MessageTooLarge,
        `A message still arriving has passed ${limits.maxMessageBytes} bytes; the limit is ${limits.maxMessageBytes}.`,
      );
      return;
    }
    if (!timer && unfinished > TIMED_ABOVE_BYTES) {
      timer = setTimeout(
        () =>
          stop(
            CloseCode.MessageTimeout,
            `A message was not finished within ${limits.maxMessageMs} ms (the limit for one message).`,
          ),
        limits.maxMessageMs,
      );
      timer.unref();
    }
  };
  socket.prependListener('data', count);
  ws.on('message', finished);
  ws.on('close', () => {
    finished();
    socket.removeListener('data', count);
  });
}
