// Every host the server contract runs against (host.ts says what a host is).
//
// To add a host: implement `ContractHost` in a module of its own (start a server with `serveEnvironment(options)`
// in its environment on a free port, resolve once it serves, hand back its URLs), add it here, and add a test
// file `test/contract/<name>.test.ts` holding `runContract('<name>')`.
import { cairnServeHost } from './cairn-serve-host.js';
import type { ContractHost } from './host.js';
import { workerdHost } from './workerd-host.js';

export const HOSTS: Record<string, ContractHost> = {
  node: cairnServeHost('node'),
  bun: cairnServeHost('bun'),
  deno: cairnServeHost('deno'),
  workerd: workerdHost,
};
