// The model proxy mounted by the real server, against an endpoint that speaks the chat-completions protocol: it
// forwards with the server's key and model, hands back the upstream's answer as it is (errors and Retry-After
// included), and with auth on spends the key only for a writer of the plan it names.
import { describe, expect, it } from 'vitest';
import { signToken } from '../src/index.js';
import { startFakeLlm } from './fake-llm.js';
import { startServer, type TestServer } from './helpers.js';

const secret = 'model-proxy-secret-with-at-least-32-bytes';

async function proxied(reply?: Parameters<typeof startFakeLlm>[0]) {
  const llm = await startFakeLlm(reply);
  const server = await startServer({
    secret,
    model: { baseUrl: llm.url, model: 'm-server', apiKey: 'sk-server' },
  });
  return { llm, server };
}

function ask(
  server: TestServer,
  headers: Record<string, string>,
  body: unknown = { messages: [{ role: 'user', content: 'hi' }] },
) {
  return fetch(`${server.http}/api/model/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const writer = (plan: string) => signToken(secret, { plan, role: 'write', sub: 'ann' });

describe('model proxy on the server', () => {
  it('forwards with the server’s key and model, and returns the completion as the model sent it', async () => {
    const { llm, server } = await proxied(() => ({
      content: null,
      toolCalls: [{ name: 'add_tasks', arguments: { tasks: [{ title: 'Book a table' }] } }],
    }));
    const response = await ask(
      server,
      { authorization: `Bearer ${await writer('acme:1')}`, 'x-cairn-plan': 'acme:1' },
      {
        model: 'gpt-expensive',
        stream: true,
        messages: [{ role: 'user', content: 'plan dinner' }],
        tools: [],
      },
    );
    expect(response.status).toBe(200);
    const completion = await response.json();
    expect(completion).toMatchObject({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      model: 'm-server',
      choices: [
        {
          finish_reason: 'tool_calls',
          message: { tool_calls: [{ type: 'function', function: { name: 'add_tasks' } }] },
        },
      ],
      usage: { prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    expect(llm.calls).toHaveLength(1);
    expect(llm.calls[0]!.headers.authorization).toBe('Bearer sk-server');
    expect(llm.calls[0]!.body).toMatchObject({ model: 'm-server', stream: false });
    // The caller's token never reaches the model.
    expect(JSON.stringify(llm.calls[0]!.headers)).not.toContain(await writer('acme:1'));
  });

  it('spends the key only for a writer of the plan it names; every refusal forwards nothing', async () => {
    const { llm, server } = await proxied();
    const reader = await signToken(secret, { plan: 'acme:1', role: 'read', sub: 'ann' });
    const cases: Array<[string, Record<string, string>, number]> = [
      ['no token, no plan', {}, 401],
      ['a token but no plan', { authorization: `Bearer ${await writer('acme:1')}` }, 401],
      ['a plan but no token', { 'x-cairn-plan': 'acme:1' }, 401],
      [
        'a token for another plan',
        { authorization: `Bearer ${await writer('acme:2')}`, 'x-cairn-plan': 'acme:1' },
        403,
      ],
      ['a read token', { authorization: `Bearer ${reader}`, 'x-cairn-plan': 'acme:1' }, 403],
      ['a forged token', { authorization: 'Bearer e30.e30.e30', 'x-cairn-plan': 'acme:1' }, 401],
    ];
    for (const [what, headers, status] of cases) {
      expect({ what, status: (await ask(server, headers)).status }).toEqual({ what, status });
    }
    expect(llm.calls).toHaveLength(0);
    const allowed = await ask(server, {
      authorization: `Bearer ${await writer('acme:*')}`,
      'x-cairn-plan': 'acme:1',
    });
    expect(allowed.status).toBe(200);
    expect(llm.calls).toHaveLength(1);
  });

  it('passes a rate-limited (429, with Retry-After) or failing (500) model through as it answered', async () => {
    let next: 429 | 500 = 429;
    const { server } = await proxied(() => ({ error: next }));
    const headers = { authorization: `Bearer ${await writer('acme:1')}`, 'x-cairn-plan': 'acme:1' };
    const limited = await ask(server, headers);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(await limited.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
    next = 500;
    const failed = await ask(server, headers);
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: { type: 'server_error' } });
  });
});
