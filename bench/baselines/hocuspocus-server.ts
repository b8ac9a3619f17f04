// Hocuspocus 4.7 with its Redis extension (@hocuspocus/extension-redis), the peer of Cairn's cluster in the
// cluster fan-out benchmark: `hocuspocus-server.ts PORT REDIS_URL`, in memory (no database extension), so several
// instances on one Redis share each document. Prints the address it took, like the other baselines. Only loopback.
import { Redis } from '@hocuspocus/extension-redis';
import { Server } from '@hocuspocus/server';

const port = Number(process.argv[2] ?? 0);
const redis = new URL(process.argv[3] ?? 'redis://127.0.0.1:6379');
const server = new Server({
  port,
  address: '127.0.0.1',
  quiet: true,
  stopOnSignals: false,
  extensions: [new Redis({ host: redis.hostname, port: Number(redis.port) })],
});
await server.listen();
process.stdout.write(`listening on http://127.0.0.1:${server.address.port}\n`);
process.on('SIGTERM', () => {
  void server.destroy().finally(() => process.exit(0));
});
