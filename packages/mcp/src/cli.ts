// `cairn mcp`: a stdio MCP server on a live plan. stdout carries the protocol, so every message of ours goes to
// stderr. Runs until the client closes stdin (or a signal), then waits (bounded, or until a second signal) until
// the plan's edits are stored; what the server has not acknowledged by then stays in the outbox.
import { parseArgs } from 'node:util';
import { CairnError, FAMILY_NAMES, type FamilyName, RENDER_FORMATS, type RenderFormat } from '@cairn/core';
import { actorFor, isPrincipalActor } from '@cairn/core/protocol';
import { openLivePlan } from './live-plan.js';
import { defaultOutboxRoot } from './outbox.js';
import { LineTransport } from './stdio.js';

export { MCP_USAGE } from './usage.js';

import { createCairnMcpServer } from './server.js';

export interface McpCliIO {
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/** Runs the server; resolves with the exit code once the client has gone and the plan is stored. */
export async function runMcpCli(args: string[], io: McpCliIO): Promise<number> {
  const options = parseMcpArgs(args, io.env);
  const live = await openLivePlan({
    planId: options.planId,
    actor: options.actor,
    ...(options.server ? { server: options.server } : {}),
    ...(options.token ? { token: options.token } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.server ? { outbox: options.outbox ?? defaultOutboxRoot(io.env) } : {}),
    onNotice: (message) => io.stderr(`cairn mcp: ${message}\n`),
  });
  const mcp = createCairnMcpServer({
    plan: live.plan,
    planId: options.planId,
    families: options.families,
    format: options.format,
    presence: () => live.presence(),
    onPresence: (listener) => live.onPresence(listener),
    onActiveTask: (taskId) => live.setActiveTask(taskId),
    traces: live.traces,
    skills: live.skills,
    confirmWrites: (undo) => live.confirmWrites(undefined, undo),
  });
  const stdin = (io.stdin ?? process.stdin) as NodeJS.ReadableStream;
  const transport = new LineTransport(stdin, io.stdout ?? process.stdout);
  const gone = new Promise<void>((resolve) => {
    mcp.server.onclose = () => resolve();
    stdin.once('end', () => resolve());
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  // A second signal (an MCP client that stops waiting sends SIGTERM) ends the wait for acknowledgements.
  const interrupted = gone.then(
    () =>
      new Promise<void>((resolve) => {
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
      }),
  );
  await mcp.server.connect(transport);
  io.stderr(
    `cairn mcp: plan "${options.planId}" as ${options.actor} (${live.connection ? 'synced' : 'on disk'})\n`,
  );
  await gone;
  await mcp.close().catch(() => undefined);
  try {
    await live.close({ interrupted });
  } catch (error) {
    io.stderr(`cairn mcp: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  return 0;
}

export interface McpCliOptions {
  planId: string;
  server: string | null;
  token: string | null;
  dataDir: string | null;
  actor: string;
  families: FamilyName[];
  format: RenderFormat;
  /** Where edits wait for the server's acknowledgement; null: the default (see `defaultOutboxRoot`). */
  outbox: string | null;
}

export function parseMcpArgs(args: string[], env: Record<string, string | undefined>): McpCliOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        plan: { type: 'string' },
        server: { type: 'string' },
        token: { type: 'string' },
        data: { type: 'string' },
        actor: { type: 'string' },
        families: { type: 'string' },
        format: { type: 'string' },
        outbox: { type: 'string' },
      },
    }));
  } catch (error) {
    throw usage((error as Error).message);
  }
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : null);
  const planId = text('plan');
  if (!planId) throw usage('--plan is required: the id of the plan to work on.');
  const server = text('server');
  const dataDir = text('data');
  if (server && dataDir) throw usage('Give either --server or --data, not both.');
  if (!server && !dataDir) throw usage('Give --server URL (a Cairn server) or --data DIR (plans on disk).');
  const token = text('token') ?? env.CAIRN_TOKEN ?? null;
  if (token && !server) throw usage('--token goes with --server.');
  const outbox = text('outbox');
  if (outbox && !server)
    throw usage('--outbox goes with --server (on disk every edit is stored as it is made).');
  const actor = text('actor') ?? defaultActor(token);
  if (!isPrincipalActor(actor)) {
    throw usage(`--actor must be "agent:<name>" or "user:<name>", not "${actor}".`);
  }
  const families = (text('families') ?? 'cairn').split(',').map((f) => f.trim());
  for (const family of families) {
    if (!(FAMILY_NAMES as readonly string[]).includes(family)) {
      throw usage(`Unknown tool family "${family}"; families: ${FAMILY_NAMES.join(', ')}.`);
    }
  }
  const format = text('format') ?? 'native';
  if (!(RENDER_FORMATS as readonly string[]).includes(format)) {
    throw usage(`--format must be one of ${RENDER_FORMATS.join(', ')}, not "${format}".`);
  }
  return {
    planId,
    server,
    token,
    dataDir,
    actor,
    families: families as FamilyName[],
    format: format as RenderFormat,
    outbox,
  };
}

/** `agent:<sub>` from the token's subject (read, not verified: the server verifies), else `agent:mcp`. */
export function defaultActor(token: string | null): string {
  const sub = token ? subjectOf(token) : null;
  if (!sub) return 'agent:mcp';
  return actorFor(sub, 'agent');
}

function subjectOf(token: string): string | null {
  const payload = token.split('.')[1];
  if (!payload) return null;
  try {
    const json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof json.sub === 'string' && json.sub.length > 0 ? json.sub : null;
  } catch {
    return null;
  }
}

function usage(message: string): CairnError {
  return new CairnError('invalid_argument', message, { usage: true });
}
