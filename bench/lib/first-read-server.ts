// A Cairn server on a data directory for the HTTP first-read benchmark, in its own process (a client in the
// server's process could not read an answer until the load behind it had finished). Prints its address, then
// `loaded <plan> <wall ms>` when a plan has loaded. Wake-ups off: without their index they load every plan at
// start, and the benchmark is about a plan not in memory. Usage: tsx first-read-server.ts DIR
import { createCairnServer, silentLogger } from '@cairn/server';

const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: first-read-server.ts DIR');
const server = createCairnServer({ dataDir: dir, logger: silentLogger, wake: false });
server.hub.use(() => ({
  name: 'loaded-probe',
  loaded(room) {
    process.stdout.write(`loaded ${room.planId} ${performance.timeOrigin + performance.now()}\n`);
  },
}));
const info = await server.listen(0, '127.0.0.1');
process.stdout.write(`listening on ${info.url}\n`);
process.on('SIGTERM', () => {
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
