// `cairn serve --lease-ms`: the claim lease set from the command line, on a single server and on a cluster
// instance (where it is also the life of the claim's reservation in Redis), refused with the valid range when
// malformed, and listed in `--help`.
import { describe, expect, it } from 'vitest';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';
import { main } from '../src/cli.js';
import { start } from './child-server.js';
import { serveChild, useClusterServices } from './cluster-helpers.js';
import { freedByLease, tempDir } from './helpers.js';
import { freePort } from './services.js';

const services = useClusterServices();

async function cli(args: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const code = await main(args, {
    stdout: (t) => {
      err += t; // --help answers on stdout
    },
    stderr: (t) => {
      err += t;
    },
    env: {},
  });
  return { code, err };
}

describe('cairn serve --lease-ms', () => {
  it('frees the claim of a holder gone for that long, on a single server and on a cluster instance', async () => {
    const single = await start([
      ...SOURCE_CLI_ARGS,
      'serve',
      '--port',
      '0',
      '--static',
      'none',
      '--data',
      await tempDir(),
      '--lease-ms',
      '1500',
    ]);
    const clustered = await serveChild(services, await freePort(), ['--lease-ms', '1500']);
    for (const server of [single, clustered]) {
      const ms = await freedByLease(server.url, 'acme:lease');
      // The default is 60 s: freed after 1.5 s (plus a sweep) is the flag at work.
      expect(ms).toBeGreaterThanOrEqual(1500);
      expect(ms).toBeLessThan(15_000);
    }
  }, 120_000);

  it('refuses a value that is not a whole number of at least 1000 ms, saying what is valid', async () => {
    for (const value of ['abc', '999', '0', '1.5e3', '']) {
      const { code, err } = await cli(['serve', '--port', '0', '--lease-ms', value]);
      expect(code, value).toBe(2);
      expect(err).toContain(`--lease-ms must be a whole number, 1000 or more, not "${value}".`);
    }
  });

  it('is described in --help', async () => {
    const { code, err } = await cli(['serve', '--help']);
    expect(code).toBe(0);
    expect(err).toMatch(/--lease-ms MS/);
    expect(err).toMatch(/absent from the plan for --lease-ms milliseconds\s+\(60000; 1000 or more\)/);
  });
});
