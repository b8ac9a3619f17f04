// The physical floor for relaying: a bare `ws` server that sends every binary message it receives to every other
// socket on the same path, unparsed. No sync protocol, no document, no storage. Only loopback.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

const port = Number(process.argv[2] ?? 0);
const rooms = new Map<string, Set<WebSocket>>();
const server = http.createServer();
const wss = new WebSocketServer({ server });
wss.on('connection', (ws, req) => {
  const key = req.url ?? '/';
  const room = rooms.get(key) ?? new Set<WebSocket>();
  rooms.set(key, room);
  room.add(ws);
  ws.on('message', (data, isBinary) => {
    for (const other of room)
      if (other !== ws && other.readyState === 1) other.send(data, { binary: isBinary });
  });
  ws.on('close', () => room.delete(ws));
});
server.listen(port, '127.0.0.1', () => {
  const { port: p } = server.address() as AddressInfo;
  process.stdout.write(`listening on http://127.0.0.1:${p}\n`);
});
process.on('SIGTERM', () => process.exit(0));
