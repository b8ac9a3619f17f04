// The server contract, written once and run against every host (hosts.ts): each host's test file calls
// `runContract(name)`. One host serves the whole file (starting one takes seconds: Node compiles the sources
// through tsx, Deno on its own); each test works on plans of its own. One local HTTP server speaking chat
// completions stands in for the judge, the distiller and the model behind the proxy, shared by the file.
import { signToken } from '@cairn/server';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../packages/server/test/fake-llm.js';
import { authContract } from './auth.js';
import { badInputContract } from './bad-input.js';
import { type Contract, defaultReply, JUDGE_MODEL, LEASE_MS, SECRET } from './contract.js';
import type { RunningHost } from './host.js';
import { HOSTS } from './hosts.js';
import { httpContract } from './http.js';
import { jobsContract } from './jobs.js';
import { racesContract } from './races.js';
import { syncContract } from './sync.js';

export function runContract(name: string): void {
  const host = HOSTS[name];
  if (!host) throw new Error(`No contract host "${name}"; the hosts are ${Object.keys(HOSTS).join(', ')}.`);
  let running: RunningHost | undefined;
  let llm: FakeLlm | undefined;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    llm = await startFakeLlm(defaultReply, (close) => closers.push(close));
    running = await host.start({
      secret: SECRET,
      judge: { url: llm.url, model: JUDGE_MODEL },
      model: { url: llm.url, model: 'model-contract', apiKey: 'sk-contract' },
      leaseMs: LEASE_MS,
    });
  }, 90_000);
  afterAll(async () => {
    await running?.stop();
    for (const close of closers) await close();
  });
  afterEach((context) => {
    if (llm) llm.reply = defaultReply;
    // What the host printed tells why it failed a test.
    if (context.task.result?.state === 'fail' && running)
      console.log(`${name} host output:\n${running.output()}`);
  });

  const contract: Contract = {
    host: () => {
      if (!running) throw new Error(`The ${name} host did not start.`);
      return running;
    },
    token: (plan, role, options = {}) =>
      signToken(
        SECRET,
        { plan, role, ...(options.sub ? { sub: options.sub } : {}) },
        { ttl: options.ttl ?? '1h' },
      ),
    llm: () => {
      if (!llm) throw new Error('The chat-completions endpoint did not start.');
      return llm;
    },
    differences: host.differences ?? {},
  };

  describe(`the server contract on ${name}`, () => {
    syncContract(contract);
    authContract(contract);
    httpContract(contract);
    racesContract(contract);
    jobsContract(contract);
    // Last: a flood may leave the host busy for a moment.
    badInputContract(contract);
  });
}
