// The Durable Object host as a host of the contract: the example worker of apps/cloudflare in the npm workerd,
// configured by the Worker variables that match `cairn serve`'s environment, on a fresh storage directory.
import { startWorkerd } from '../../apps/cloudflare/test/workerd.js';
import { type ContractHost, serveEnvironment } from './host.js';

export const workerdHost: ContractHost = {
  name: 'workerd',
  differences: { metricsPerPlan: true },
  async start(options) {
    const output: string[] = [];
    const running = await startWorkerd({
      vars: {
        ...serveEnvironment(options),
        ...(options.leaseMs !== undefined ? { CAIRN_LEASE_MS: String(options.leaseMs) } : {}),
      },
      onOutput: (chunk) => output.push(chunk),
    });
    return {
      http: running.url,
      ws: `ws://127.0.0.1:${running.port}`,
      output: () => output.join(''),
      stop: () => running.dispose(),
    };
  },
};
