// The line transport of `cairn mcp` on in-memory streams: messages split across chunks or sharing one arrive whole,
// and a line over the limit is answered with the id read from its edges (first or last, where clients write it),
// never one nested in its params.
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { LineTransport } from '../src/stdio.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages whose shape each assertion states
type Json = any;

async function transport(maxMessageBytes: number) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const received: JSONRPCMessage[] = [];
  const sent: Json[] = [];
  stdout.setEncoding('utf8').on('data', (text: string) => {
    for (const line of text.split('\n').filter(Boolean)) sent.push(JSON.parse(line));
  });
  const line = new LineTransport(stdin, stdout, { maxMessageBytes });
  line.onmessage = (message) => received.push(message);
  await line.start();
  /** Writes the chunks, then waits until the streams have passed them on. */
  const write = async (...chunks: string[]) => {
    for (const chunk of chunks) stdin.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { write, received, sent };
}

describe('LineTransport', () => {
  it('joins a message split across chunks and splits two in one chunk, CRLF or not', async () => {
    const t = await transport(1000);
    await t.write(
      '{"jsonrpc":"2.0","id":1,',
      '"method":"ping"}\r\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n',
    );
    expect(t.received).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
    ]);
    expect(t.sent).toEqual([]);
  });

  it('answers a line over the limit with its id, wherever the client put it, and goes on', async () => {
    const t = await transport(100);
    const big = 'z'.repeat(500);
    await t.write(`{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{"x":"${big}"}}\n`);
    const idLast = `{"method":"tools/call","params":{"x":"${big}"},"jsonrpc":"2.0","id":7}`;
    await t.write(idLast.slice(0, 250), `${idLast.slice(250)}\n`);
    // An id inside params is not the message's: the error carries null.
    await t.write(`{"method":"tools/call","params":{"x":"${big}","id":9}}\n`);
    await t.write('{"jsonrpc":"2.0","id":3,"method":"ping"}\n');
    expect(t.sent.map((m) => [m.id, m.error.code])).toEqual([
      ['first', -32600],
      [7, -32600],
      [null, -32600],
    ]);
    expect(t.sent[1].error).toMatchObject({
      message: `Message too large: ${idLast.length} bytes, and a message (one line) may be at most 100 bytes.`,
      data: { limitBytes: 100, bytes: idLast.length },
    });
    expect(t.received).toEqual([{ jsonrpc: '2.0', id: 3, method: 'ping' }]);
  });
});
