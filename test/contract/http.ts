// docs/PROTOCOL.md's HTTP contract as one table, on every host: every route's success status, and the exact
// bodies and headers of the errors every route shares (404 listing the endpoints, 405 with Allow, 400 for a bad
// percent-encoding, 413 and 415 closing a kept-alive connection, 401/403, 429 with Retry-After), so a change of
// router or host is checked answer for answer.
import { Agent, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { type Contract, freshPlan, metricsPath } from './contract.js';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function call(
  contract: Contract,
  method: string,
  path: string,
  options: { auth?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(`${contract.host().http}${path}`, {
    method,
    headers: {
      ...(options.auth ? { authorization: `Bearer ${options.auth}` } : {}),
      ...(method === 'POST' || method === 'PATCH' ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const NOT_FOUND_MESSAGE = (path: string) =>
  `Nothing at ${path}. Known endpoints: GET /healthz, GET /metrics, WS /sync/<planId>, and the plan API: ` +
  'GET /api/plans/<planId>/tasks, PATCH .../tasks/<taskId>, GET .../context, GET .../tools, ' +
  'POST .../tools/<name>, POST .../judge, GET .../traces, GET .../learned, POST .../distill, GET /api/scopes/<scope>/skills ' +
  '(docs/PROTOCOL.md, "HTTP API").';

export function httpContract(contract: Contract): void {
  const token = (role: 'read' | 'write' | 'admin', plan = 'acme:*', sub = 'ann') =>
    contract.token(plan, role, { sub });

  describe('the HTTP contract of docs/PROTOCOL.md', () => {
    it('answers every route with its success status', async () => {
      const write = await token('write');
      const read = await token('read');
      const plan = '/api/plans/acme%3Aconv%3A1';
      const added = await call(contract, 'POST', `${plan}/tools/add_tasks`, {
        auth: write,
        body: { tasks: [{ title: 'Book a table for 4' }] },
      });
      expect(added.status).toBe(200);
      const taskId = JSON.parse(added.text).added[0].id as string;
      await call(contract, 'PATCH', `${plan}/tasks/${taskId}`, {
        auth: write,
        body: { status: 'in_progress' },
      });
      // Done: its trace is what the offline distiller learns a skill from.
      await call(contract, 'PATCH', `${plan}/tasks/${taskId}`, { auth: write, body: { status: 'done' } });
      const learned = await call(contract, 'POST', `${plan}/distill`, { auth: write, body: { taskId } });
      expect(learned.status).toBe(200);
      const skillId = JSON.parse(learned.text).skill.id as string;

      const routes: Array<
        [method: string, path: string, status: number, options?: Parameters<typeof call>[3]]
      > = [
        ['GET', '/healthz', 200],
        ['GET', metricsPath(contract, 'acme:conv:1'), 200],
        ['GET', `${plan}/tasks?includeClosed=1&limit=5`, 200, { auth: read }],
        ['GET', `${plan}/tasks/${taskId}`, 200, { auth: read }],
        ['GET', `${plan}/tasks/1`, 200, { auth: read }],
        ['PATCH', `${plan}/tasks/${taskId}`, 200, { auth: write, body: { status: 'done', note: 'Booked.' } }],
        ['GET', `${plan}/context?format=checklist&maxTokens=500`, 200, { auth: read }],
        [
          'POST',
          `${plan}/context`,
          200,
          { auth: read, body: { template: [{ section: 'a', role: 'system', content: 'Hi {{my_actor}}' }] } },
        ],
        ['GET', `${plan}/tools?format=anthropic&families=todo`, 200, { auth: read }],
        ['POST', `${plan}/tools/list_tasks`, 200, { auth: read }],
        ['POST', `${plan}/judge`, 200, { auth: write }],
        ['GET', `${plan}/chat`, 200, { auth: read }],
        ['POST', `${plan}/chat`, 201, { auth: write, body: { role: 'user', text: 'Thanks' } }],
        ['GET', `${plan}/decisions`, 200, { auth: read }],
        ['GET', `${plan}/traces`, 200, { auth: read }],
        ['GET', `${plan}/learned?message=book%20a%20table`, 200, { auth: read }],
        ['POST', `${plan}/distill`, 200, { auth: write, body: { taskId } }],
        ['GET', '/api/scopes/acme/skills', 200, { auth: read }],
        ['GET', `/api/scopes/acme/skills/${skillId}`, 200, { auth: read }],
        ['PATCH', `/api/scopes/acme/skills/${skillId}`, 200, { auth: write, body: { status: 'retired' } }],
        ['GET', '/api/model', 200],
        [
          'POST',
          '/api/model/chat/completions',
          200,
          {
            auth: write,
            headers: { 'x-cairn-plan': 'acme:conv:1' },
            body: { messages: [{ role: 'user', content: 'hi' }] },
          },
        ],
        ['HEAD', `${plan}/tasks`, 200, { auth: read }],
      ];
      const answers: string[] = [];
      for (const [method, path, , options] of routes) {
        const answer = await call(contract, method, path, options);
        answers.push(`${method} ${path} ${answer.status}${answer.status >= 300 ? ` ${answer.text}` : ''}`);
      }
      expect(answers).toEqual(routes.map(([method, path, status]) => `${method} ${path} ${status}`));
      if (contract.differences.metricsPerPlan) {
        const bare = await call(contract, 'GET', '/metrics');
        expect(bare.status).toBe(400);
        expect(JSON.parse(bare.text).error).toMatchObject({ code: 'invalid_argument', field: 'plan' });
      }
    });

    it('answers what no route serves with the shared error bodies, exactly', async () => {
      const write = await token('write');

      const unknown = await call(contract, 'GET', '/api/plans/x/unknown');
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(unknown.text).toBe(
        JSON.stringify({
          error: {
            path: '/api/plans/x/unknown',
            code: 'not_found',
            message: NOT_FOUND_MESSAGE('/api/plans/x/unknown'),
          },
        }),
      );
      expect((await call(contract, 'GET', '/')).text).toBe(
        JSON.stringify({ error: { path: '/', code: 'not_found', message: NOT_FOUND_MESSAGE('/') } }),
      );

      for (const [method, path, allow] of [
        ['POST', '/healthz', 'GET'],
        ['DELETE', '/api/plans/acme%3A1/tasks/t1', 'GET, PATCH'],
        ['GET', '/api/plans/acme%3A1/judge', 'POST'],
        ['PUT', '/api/plans/acme%3A1/chat', 'GET, POST'],
        ['HEAD', '/api/plans/acme%3A1/distill', 'POST'],
      ] as const) {
        const refused = await call(contract, method, path, { auth: write });
        expect(refused.status).toBe(405);
        expect(refused.headers.get('allow')).toBe(allow);
        if (method !== 'HEAD') {
          expect(refused.text).toBe(
            JSON.stringify({
              error: {
                code: 'invalid_argument',
                message: `${method} is not allowed here; use ${allow.split(', ').join(' or ')}.`,
              },
            }),
          );
        }
      }

      for (const [path, field, segment] of [
        ['/api/plans/%ZZ/tasks', 'plan', '%ZZ'],
        ['/api/plans/acme%3A1/tasks/%E0%A4%A', 'taskId', '%E0%A4%A'],
        ['/api/scopes/ac%2/skills', 'scope', 'ac%2'],
      ] as const) {
        const bad = await call(contract, 'GET', path, { auth: write });
        expect(bad.status).toBe(400);
        expect(bad.text).toBe(
          JSON.stringify({
            error: {
              field,
              code: 'invalid_argument',
              message: `The path segment "${segment}" is not valid percent-encoding (e.g. acme%3Aconv%3A7).`,
            },
          }),
        );
      }

      for (const [method, type, shown] of [
        ['POST', 'text/plain', ', not text/plain'],
        ['PATCH', '', ''],
        ['POST', 'application/x-www-form-urlencoded', ', not application/x-www-form-urlencoded'],
      ] as const) {
        const path =
          method === 'POST' ? '/api/plans/acme%3A1/tools/add_tasks' : '/api/plans/acme%3A1/tasks/t1';
        const response = await fetch(`${contract.host().http}${path}`, {
          method,
          headers: { authorization: `Bearer ${write}`, ...(type ? { 'content-type': type } : {}) },
          body: type ? 'x=1' : null,
        });
        expect(response.status).toBe(415);
        expect(await response.text()).toBe(
          JSON.stringify({
            error: {
              field: 'content-type',
              code: 'invalid_argument',
              message: `A ${method} needs the header Content-Type: application/json${shown} (even with an empty body).`,
            },
          }),
        );
      }
    });

    it('refuses tokens with 401 and 403 in the words PROTOCOL.md gives', async () => {
      const path = '/api/plans/acme%3A1/tasks';
      const cases: Array<[Record<string, string>, number, string]> = [
        [{}, 401, 'No token: send it as the header Authorization: Bearer <jwt>.'],
        [{ authorization: 'Basic abc' }, 401, 'The Authorization header is not "Bearer <jwt>".'],
        [{ authorization: `Bearer ${await token('read', 'other:*')}` }, 403, 'acme:1'],
      ];
      for (const [headers, status, words] of cases) {
        const answer = await call(contract, 'GET', path, { headers });
        expect(answer.status).toBe(status);
        const { error } = JSON.parse(answer.text);
        expect(error.code).toBe(status === 401 ? 'unauthorized' : 'forbidden');
        expect(error.message).toContain(words);
      }
      const reader = await call(contract, 'POST', '/api/plans/acme%3A1/tools/add_tasks', {
        auth: await token('read'),
        body: { tasks: [{ title: 'x' }] },
      });
      expect(reader.status).toBe(403);
      expect(JSON.parse(reader.text).error).toMatchObject({ code: 'forbidden', message: /needs role write/ });
    });

    it('closes a kept-alive connection after a refused body (413, 415) and answers the next request on a new one', async () => {
      const auth = `Bearer ${await token('write')}`;
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      type Answer = { status: number; connection: string | undefined; text: string };
      // The server answers a refused body and closes while the client may still be writing the rest of it; Node's
      // client can then see its own write fail (EPIPE) before it reads the answer that was sent. Such a request
      // is sent again (at most three times): what is checked is the answer.
      const send = async (headers: Record<string, string>, body: Buffer | string): Promise<Answer> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await sendOnce(headers, body);
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code;
            if (attempt >= 3 || (code !== 'EPIPE' && code !== 'ECONNRESET')) throw error;
          }
        }
      };
      const sendOnce = (headers: Record<string, string>, body: Buffer | string) =>
        new Promise<Answer>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port: Number(new URL(contract.host().http).port),
              method: 'POST',
              path: '/api/plans/acme%3A1/tools/add_tasks',
              headers,
              agent,
            },
            (res) => {
              let text = '';
              res.on('data', (chunk) => {
                text += chunk;
              });
              res.on('end', () =>
                resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, text }),
              );
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      try {
        const tooLarge = await send(
          { authorization: auth, 'content-type': 'application/json' },
          Buffer.alloc(2 * 1024 * 1024, 0x20),
        );
        expect(tooLarge).toEqual({
          status: 413,
          connection: 'close',
          text: JSON.stringify({
            error: { maxBytes: 1048576, code: 'limit', message: 'The body is larger than 1048576 bytes.' },
          }),
        });
        // Without a declared length (chunked), the body is read until it passes the limit, and no further.
        const chunked = await send(
          { authorization: auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
          Buffer.alloc(2 * 1024 * 1024, 0x20),
        );
        expect(chunked).toEqual(tooLarge);
        const tooMany = await send(
          { authorization: auth, 'content-type': 'application/json' },
          JSON.stringify({ tasks: Array.from({ length: 1001 }, () => ({ title: 'x' })) }),
        );
        expect(tooMany.status).toBe(413);
        expect(JSON.parse(tooMany.text).error).toMatchObject({ code: 'limit', maxNodes: 1000 });
        const notJson = await send(
          { authorization: auth, 'content-type': 'text/plain' },
          'x'.repeat(100_000),
        );
        expect(notJson).toMatchObject({ status: 415, connection: 'close' });
        const next = await send(
          { authorization: auth, 'content-type': 'application/json' },
          '{"tasks":[{"title":"a"}]}',
        );
        expect(next.status).toBe(200);
      } finally {
        agent.destroy();
      }
    });

    it('answers a caller over its rate with 429, Retry-After and the limit it passed', async () => {
      // The default limits (20 requests per second, bursts of 100), by token: a token of its own.
      const auth = await token('read', 'acme:*', `rate-${freshPlan()}`);
      // Sent at once, so that no refill at 20 per second can keep up however slowly the machine answers.
      const answers = await Promise.all(
        Array.from({ length: 250 }, () => call(contract, 'GET', '/api/model', { auth })),
      );
      expect(answers.filter((a) => a.status !== 200 && a.status !== 429)).toEqual([]);
      const limited = answers.find((a) => a.status === 429);
      expect(limited?.status).toBe(429);
      const retryAfter = Number(limited!.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(limited!.text).toBe(
        JSON.stringify({
          error: {
            retryAfter,
            code: 'limit',
            message: `Too many requests: at most 20 per second and 1048576 body bytes per second for one token. Retry after ${retryAfter} s.`,
          },
        }),
      );
      // Another token is not affected.
      expect((await call(contract, 'GET', '/api/model', { auth: await token('read') })).status).toBe(200);
    });

    it('passes the model’s answer through as it was sent: status, content type, body and Retry-After', async () => {
      const llm = contract.llm();
      const auth = await token('write');
      const ask = () =>
        call(contract, 'POST', '/api/model/chat/completions', {
          auth,
          headers: { 'x-cairn-plan': 'acme:conv:1' },
          body: { messages: [{ role: 'user', content: 'hi' }] },
        });
      llm.reply = () => ({ error: 429 });
      const limited = await ask();
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('7');
      expect(limited.headers.get('cache-control')).toBe('no-store');
      expect(JSON.parse(limited.text)).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
      llm.reply = () => ({ status: 200, body: '{"id":"chatcmpl-x","choices":[]}' });
      const ok = await ask();
      expect(ok).toMatchObject({ status: 200, text: '{"id":"chatcmpl-x","choices":[]}' });
      expect(ok.headers.get('content-type')).toBe('application/json');
      expect(ok.headers.get('content-length')).toBe('32');
    });
  });
}
