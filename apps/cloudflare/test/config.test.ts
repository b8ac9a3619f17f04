// A Worker variable Cairn reads that does not parse is the operator's mistake: every route, the Worker's own and a
// plan object's, answers 503 naming the variable and what it takes, instead of each object failing its own way.
import { afterEach, describe, expect, it } from 'vitest';
import { signToken } from '../../../packages/server/src/index.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';

const SECRET = 'edge-config-secret-edge-config-secret-0123';

let w: RunningWorkerd | undefined;
afterEach(async () => {
  await w?.dispose();
  w = undefined;
});

async function refusal(response: Response): Promise<string> {
  expect(response.status).toBe(503);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe('storage');
  return body.error.message;
}

describe('a Worker with a variable that does not parse', () => {
  it.each([
    ['CAIRN_SQLITE_CHUNK_BYTES', '3000000', 'give a whole number of bytes from 1 to 1900000'],
    ['CAIRN_SQLITE_CHUNK_BYTES', '1.5', 'give a whole number of bytes from 1 to 1900000'],
    ['CAIRN_LEASE_MS', '-5', 'give milliseconds, 0 or more'],
  ])('%s = "%s" gets 503 on every route, saying what it takes', async (name, value, rule) => {
    w = await startWorkerd({ vars: { CAIRN_SECRET: SECRET, [name]: value } });
    const said = `${name} is "${value}": ${rule}`;
    expect(await refusal(await fetch(`${w.url}/healthz`))).toContain(said);
    const token = await signToken(SECRET, { plan: 'acme:config', role: 'write', sub: 'agent:config' });
    const read = await fetch(`${w.url}/api/plans/acme%3Aconfig/tasks`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await refusal(read)).toContain(said);
  });

  it('serves once the variables parse (the same values the refusals above would take)', async () => {
    w = await startWorkerd({
      vars: { CAIRN_SECRET: SECRET, CAIRN_SQLITE_CHUNK_BYTES: '1900000', CAIRN_LEASE_MS: '0' },
    });
    expect((await fetch(`${w.url}/healthz`)).status).toBe(200);
  });
});
