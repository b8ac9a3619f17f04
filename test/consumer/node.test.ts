// Node 20, plain JavaScript, on the packages npm installed from the tarballs: the README example, disk
// persistence across processes, `cairn serve` with a WebSocket client and an HTTP tool call, `cairn mcp` with the
// official MCP client, and a user's mistakes (require(), a missing peer dependency).
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { run, type Served, startCairn, userEnv } from './lib.js';
import { expectSyncedToolCall } from './synced-tool-call.js';

const { app, nopeer, vitest2 } = inject('consumer');
const node = (args: string[], cwd = app, allowFailure = false) =>
  run(process.execPath, args, { cwd, allowFailure, timeoutMs: 60_000 });

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-consumer-node-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function serve(): Promise<Served> {
  const served = await startCairn(app);
  cleanups.push(() => served.stop());
  return served;
}

describe('Node 20 with the installed packages', () => {
  it('runs the README example and prints the ready list', async () => {
    const { stdout } = await node(['readme.mjs']);
    expect(stdout.trim().split('\n')[0]).toBe("[ 'Review' ]");
  });

  it('installs one copy of yjs, shared by Cairn and the app', () => {
    const copies: string[] = [];
    // Every package directory under a node_modules (scoped ones one level down), and their own node_modules.
    const walk = (modules: string) => {
      for (const entry of readdirSync(modules, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const path = join(modules, entry.name);
        if (entry.name.startsWith('@')) walk(path);
        else if (entry.name === 'yjs') copies.push(path);
        if (existsSync(join(path, 'node_modules'))) walk(join(path, 'node_modules'));
      }
    };
    walk(join(app, 'node_modules'));
    expect(copies).toEqual([join(app, 'node_modules/yjs')]);
  });

  it('names both copies when the app hands Cairn a Y.Doc from a second copy of yjs', async () => {
    const result = JSON.parse((await node(['two-copies.mjs'])).stdout);
    expect(result).toMatchObject({ name: 'CairnError', code: 'two_yjs_copies' });
    expect(result.theirs).toMatch(/node_modules\/yjs\/dist\/yjs\.cjs$/);
    expect(result.ours).toMatch(/node_modules\/yjs\/dist\/yjs\.mjs$/);
    expect(result.message).toContain(result.theirs);
  });

  it('runs the AI SDK adapter (@cairn/core/ai) in generateText with the AI SDK installed', async () => {
    const out = JSON.parse((await node(['agent-ai.mjs'])).stdout);
    expect(out.text).toBe('done');
    expect(out.titles).toEqual(['Ship it']);
    expect(out.createdBy).toBe('agent:app');
    expect(out.read[0].added[0].title).toBe('Ship it');
  });

  it('persists a plan with @cairn/core/fs, and a second process loads it', async () => {
    const dir = tempDir();
    expect((await node(['persist-write.mjs', dir])).stdout.trim()).toBe('stored');
    const loaded = JSON.parse((await node(['persist-read.mjs', dir])).stdout);
    expect(loaded).toEqual({
      tasks: [
        { title: 'Draft the release notes', status: 'done', by: 'agent:writer' },
        { title: 'Publish the release', status: 'pending', by: 'agent:writer' },
      ],
      ready: ['Publish the release'],
    });
  });

  it('installs no TypeScript runner or compiler: the CLI runs on node alone', () => {
    for (const name of ['tsx', 'typescript', 'esbuild'])
      expect(existsSync(join(app, 'node_modules', name))).toBe(false);
  });

  it('serves the bundled demo and syncs a WebSocket client that sees a task an HTTP tool call added', async () => {
    const server = await serve();
    const page = await fetch(`${server.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<script type="module"[^>]+src="\/assets\/[^"]+\.js"/);

    const client = await expectSyncedToolCall(app, server.url);
    cleanups.push(() => client.stop());
  });

  it('answers the official MCP client from `cairn mcp`', async () => {
    const dir = tempDir();
    const client = new Client({ name: 'consumer-test', version: '1.0.0' });
    const env = userEnv() as Record<string, string>;
    await client.connect(
      new StdioClientTransport({
        command: join(app, 'node_modules/.bin/cairn'),
        args: ['mcp', '--plan', 'consumer:mcp', '--data', dir],
        cwd: app,
        env,
        stderr: 'pipe',
      }),
    );
    cleanups.push(() => client.close());
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['add_tasks', 'update_tasks', 'list_tasks']),
    );
    const added = await client.callTool({ name: 'add_tasks', arguments: { tasks: [{ title: 'From MCP' }] } });
    expect(added.isError).toBeFalsy();
    const listed = await client.callTool({ name: 'list_tasks', arguments: { view: 'all' } });
    expect(JSON.stringify(listed.content)).toContain('From MCP');
  });

  it('loads with require() where Node can, and otherwise says to use import()', async () => {
    expect((await node(['require.cjs'])).stdout.trim()).toBe('Loaded with require');
    const refused = await node(['--no-experimental-require-module', 'require.cjs'], app, true);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('ERR_REQUIRE_ESM');
    expect(refused.stderr).toContain('dynamic import()');
  });

  it("runs @cairn/core/testing's byte adapter suite in a project on vitest 2", async () => {
    // A whole suite (lock and sharing tests among them), not one script: more than `node`'s 60 s on a busy
    // machine, where it was killed just after printing its summary.
    const result = await run(process.execPath, [join(vitest2, 'node_modules/vitest/vitest.mjs'), 'run'], {
      cwd: vitest2,
      allowFailure: true,
      timeoutMs: 240_000,
    });
    const output = result.stdout + result.stderr;
    expect(output).toMatch(/Test Files\s+1 passed/);
    expect(output).toMatch(/Tests\s+\d+ passed/);
    expect(result.code).toBe(0);
  }, 300_000);

  it('names gpt-tokenizer, the optional peer of @cairn/core/tokenizer, when it is missing', async () => {
    const result = await node(
      ['--input-type=module', '-e', "await import('@cairn/core/tokenizer')"],
      nopeer,
      true,
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Cannot find package 'gpt-tokenizer' imported from .*@cairn[/\\]core/);
  });

  it('names the missing peer dependency, and `cairn` says what to install', async () => {
    const library = await node(['--input-type=module', '-e', "await import('@cairn/core')"], nopeer, true);
    expect(library.code).not.toBe(0);
    expect(library.stderr).toMatch(/Cannot find package 'yjs' imported from .*@cairn[/\\]core/);

    const cli = await run(join(nopeer, 'node_modules/.bin/cairn'), ['serve', '--port', '0'], {
      cwd: nopeer,
      allowFailure: true,
    });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(
      'the package "yjs" is not installed; @cairn/server needs it beside it: npm install yjs',
    );
  });
});
