// The reference y-websocket server, as @y/websocket-server's own bin runs it (its `setupWSConnection` on a plain
// http server; in memory, no persistence), but on a port given on the command line (0: a free one) and
// printing the address it took. Only loopback.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setupWSConnection } from '@y/websocket-server/utils';
import { WebSocketServer } from 'ws';

const port = Number(process.argv[2] ?? 0);
const wss = new WebSocketServer({ noServer: true });
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('okay');
});
wss.on('connection', setupWSConnection);
server.on('upgrade', (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});
server.listen(port, '127.0.0.1', () => {
  const { port: p } = server.address() as AddressInfo;
  process.stdout.write(`listening on http://127.0.0.1:${p}\n`);
});
process.on('SIGTERM', () => process.exit(0));
