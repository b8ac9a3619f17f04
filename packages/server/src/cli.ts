// The `cairn` command: `serve` runs the sync server, `token` prints a signed token. Only `serve`'s
// `listening on http://HOST:PORT` line goes to stdout; every other message goes to stderr. `mcp` (stdout is the
// MCP protocol), `agents` (stdout is its event log) and `log` (stdout is its report) live in their own modules.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError, isCairnError } from '@cairn/core';
import { DEFAULT_TRACE_BOUND } from '@cairn/core/learning';
import { MCP_USAGE } from '@cairn/mcp/usage';
import { AGENTS_USAGE, runAgentsCli } from './agents-cli.js';
import { ROLES, type Role, signToken } from './auth.js';
import { parseOptions, usage } from './cli-args.js';
import { bundledDemoDir } from './demo-assets.js';
import { judgeFromEnv } from './extensions/auto-close.js';
import { DEFAULT_ABSENT_MS } from './extensions/claims.js';
import { distillerFromEnv } from './extensions/learning/distiller.js';
import { listFromEnv } from './http/origin.js';
import { createConsoleLogger } from './log.js';
import { modelProxyFromEnv } from './model-proxy.js';
import { createCairnServer } from './node-host.js';
import { LOG_USAGE, runLogCli } from './store/log-cli.js';

const SERVE_USAGE = `  cairn serve [--port N] [--host H] [--data DIR] [--secret-file F] [--static DIR] [--log-level warn|info]
              [--trace-calls N] [--trace-days D] [--retire-after N] [--idle-unload S] [--max-loaded-plans N]
              [--lease-ms MS] [--redis URL --postgres URL]
      Runs the sync server (defaults: port 1234, host 127.0.0.1, data ./data; --port 0 takes a free port).
      With --redis and --postgres (or CAIRN_REDIS_URL and CAIRN_POSTGRES_URL) it is one instance of a cluster:
      plans are stored in PostgreSQL and shared with the other instances through Redis (no --data).
      Serves the bundled demo at / unless --static names another built app (--static none: no pages).
      --log-level info also logs events such as wake-ups (task_woken) and auto-close decisions (task_close).
      Auth is on when CAIRN_SECRET or --secret-file gives a secret; without one the server is open and
      listens on loopback only, answering only pages of its own origin (CAIRN_ALLOWED_ORIGINS and
      CAIRN_ALLOWED_HOSTS, comma-separated, allow more). Auto-close judges open tasks after each turn when CAIRN_JUDGE_URL (an
      OpenAI-compatible base URL) and CAIRN_JUDGE_MODEL are set (CAIRN_JUDGE_KEY: its API key); the same
      model writes skills learned from finished tasks (without one, an offline distiller writes them).
      Each plan's trace of tool calls keeps at most --trace-calls calls (500) of the last --trace-days days
      (30); a skill is retired after --retire-after failed tasks in a row (3).
      A plan nobody uses is unloaded after --idle-unload seconds (30); with --max-loaded-plans, loading one
      more than N unloads the least recently used plan that no client and no job is using (default: no cap).
      A claimed task is freed once its holder has been absent from the plan for --lease-ms milliseconds
      (60000; 1000 or more); in a cluster this is also how long the claim's reservation in Redis lives.
`;

const TOKEN_USAGE = `  cairn token --plan ID|PATTERN --role read|write|admin [--sub NAME] [--ttl 1h] [--secret-file F]
      Prints a token signed with the server's secret (CAIRN_SECRET or --secret-file).
`;

/** Each command's own usage, for `cairn <command> --help` and `cairn help <command>`. */
const COMMAND_USAGE: Record<string, string> = {
  serve: SERVE_USAGE,
  token: TOKEN_USAGE,
  mcp: MCP_USAGE,
  agents: AGENTS_USAGE,
  log: LOG_USAGE,
};

const USAGE = `Usage:\n${SERVE_USAGE}${TOKEN_USAGE}${MCP_USAGE}${AGENTS_USAGE}${LOG_USAGE}`;

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

const defaultIO: CliIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

/** Runs one command; resolves with the exit code (for `serve`, once the server has shut down). */
export async function main(argv: string[], io: CliIO = defaultIO): Promise<number> {
  const [command, ...rest] = argv;
  // `cairn serve --help`, `cairn help serve`: the usage asked for goes to stdout (it is the answer, not a mistake),
  // that command's own, or everything for a command Cairn does not have.
  const asked =
    command === 'help' ? rest[0] : rest.includes('--help') || rest.includes('-h') ? command : null;
  if (command === 'help' || asked) {
    const own = asked ? COMMAND_USAGE[asked] : undefined;
    io.stdout(own ? `Usage:\n${own}` : USAGE);
    return 0;
  }
  try {
    switch (command) {
      case 'serve':
        return await serve(rest, io);
      case 'token':
        return await token(rest, io);
      case 'mcp': {
        // Loaded only here: the MCP SDK is not needed to serve.
        const { runMcpCli } = await import('@cairn/mcp');
        return await runMcpCli(rest, { stderr: io.stderr, env: io.env });
      }
      case 'agents':
        return await runAgentsCli(rest, io);
      case 'log':
        return await runLogCli(rest, io);
      case '--help':
      case '-h':
        io.stdout(USAGE);
        return 0;
      case undefined:
        io.stderr(USAGE); // no command is a mistake: the usage goes with the error stream
        return 2;
      default:
        throw usage(`Unknown command "${command}".`);
    }
  } catch (error) {
    io.stderr(`cairn: ${error instanceof Error ? error.message : String(error)}\n`);
    if (isCairnError(error) && error.details.usage) io.stderr(`\n${USAGE}`);
    return isCairnError(error) && error.code === 'invalid_argument' ? 2 : 1;
  }
}

function readSecret(values: { 'secret-file'?: string | boolean }, io: CliIO): string | null {
  const file = values['secret-file'];
  if (typeof file === 'string') {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new CairnError(
        'invalid_argument',
        `Could not read the secret file ${file}: ${(error as Error).message}`,
      );
    }
    const secret = text.trim();
    if (!secret) throw new CairnError('invalid_argument', `The secret file ${file} is empty.`);
    return secret;
  }
  return io.env.CAIRN_SECRET?.trim() || null;
}

function positiveInt(value: string | undefined, flag: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || !Number.isSafeInteger(n))
    throw usage(`${flag} must be a whole number, ${min} or more, not "${value}".`);
  return n;
}

async function serve(args: string[], io: CliIO): Promise<number> {
  const values = parseOptions(args, {
    port: { type: 'string' },
    host: { type: 'string' },
    data: { type: 'string' },
    'secret-file': { type: 'string' },
    static: { type: 'string' },
    'log-level': { type: 'string' },
    'trace-calls': { type: 'string' },
    'trace-days': { type: 'string' },
    'retire-after': { type: 'string' },
    'idle-unload': { type: 'string' },
    'max-loaded-plans': { type: 'string' },
    'lease-ms': { type: 'string' },
    redis: { type: 'string' },
    postgres: { type: 'string' },
  });
  const traceCalls = positiveInt(values['trace-calls'], '--trace-calls', DEFAULT_TRACE_BOUND.maxCalls);
  const traceDays = positiveInt(
    values['trace-days'],
    '--trace-days',
    DEFAULT_TRACE_BOUND.maxAgeMs / 86_400_000,
  );
  const retireAfter = positiveInt(values['retire-after'], '--retire-after', 3);
  // Below a second a holder's reconnect (jittered up to 1 s) would already cost it its claims.
  const leaseMs = positiveInt(values['lease-ms'], '--lease-ms', DEFAULT_ABSENT_MS, 1000);
  const idleUnloadSeconds = positiveInt(values['idle-unload'], '--idle-unload', 30);
  const maxLoadedPlans =
    values['max-loaded-plans'] === undefined
      ? undefined
      : positiveInt(values['max-loaded-plans'], '--max-loaded-plans', 0);
  const logLevel = values['log-level'] ?? 'warn';
  if (logLevel !== 'warn' && logLevel !== 'info') {
    throw usage(`--log-level must be warn (the default) or info, not "${logLevel}".`);
  }
  const port = Number(values.port ?? '1234');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw usage(`--port must be an integer from 0 to 65535 (0 takes a free port), not "${values.port}".`);
  }
  if (values.static && values.static !== 'none' && !existsSync(join(values.static, 'index.html'))) {
    throw usage(
      `--static ${values.static} has no index.html: build the app first, or point at its build directory.`,
    );
  }
  const cluster = await connectClusterFromArgs(values, io, leaseMs);
  const server = createCairnServer({
    ...(cluster
      ? cluster.serverOptions
      : { dataDir: values.data ?? './data', claims: { absentMs: leaseMs } }),
    secret: readSecret(values, io),
    staticDir: values.static === 'none' ? null : (values.static ?? bundledDemoDir()),
    logger: createConsoleLogger({ quiet: logLevel === 'warn' }),
    judge: judgeFromEnv(io.env),
    distiller: distillerFromEnv(io.env),
    learning: {
      ...cluster?.serverOptions.learning,
      traceBound: { maxCalls: traceCalls, maxAgeMs: traceDays * 86_400_000 },
      retireAfter,
    },
    model: modelProxyFromEnv(io.env),
    allowedHosts: listFromEnv(io.env.CAIRN_ALLOWED_HOSTS),
    allowedOrigins: listFromEnv(io.env.CAIRN_ALLOWED_ORIGINS),
    idleUnloadMs: idleUnloadSeconds * 1000,
    ...(maxLoadedPlans !== undefined ? { maxLoadedPlans } : {}),
  });
  let info: Awaited<ReturnType<typeof server.listen>>;
  try {
    info = await server.listen(port, values.host ?? '127.0.0.1');
  } catch (error) {
    await server.close().catch(() => undefined);
    throw error;
  }
  io.stdout(`listening on ${info.url}\n`);

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        io.stderr(`cairn: ${signal} again, exiting without waiting for the flush\n`);
        resolve(1);
        return;
      }
      stopping = true;
      server.close().then(
        () => resolve(0),
        (error: unknown) => {
          io.stderr(`cairn: shutdown failed: ${error instanceof Error ? error.message : String(error)}\n`);
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}

/** The cluster named by --redis/--postgres or the environment; null for a single server. */
async function connectClusterFromArgs(
  values: { redis?: string | boolean; postgres?: string | boolean; data?: string | boolean },
  io: CliIO,
  leaseMs: number,
) {
  const redisUrl = (typeof values.redis === 'string' ? values.redis : io.env.CAIRN_REDIS_URL)?.trim() || null;
  const postgresUrl =
    (typeof values.postgres === 'string' ? values.postgres : io.env.CAIRN_POSTGRES_URL)?.trim() || null;
  if (!redisUrl && !postgresUrl) return null;
  if (!redisUrl || !postgresUrl) {
    throw usage(
      redisUrl
        ? 'A cluster instance needs --postgres URL (or CAIRN_POSTGRES_URL) beside --redis: PostgreSQL stores its plans.'
        : "A cluster instance needs --redis URL (or CAIRN_REDIS_URL) beside --postgres: without Redis, instances on one database would not see each other's edits.",
    );
  }
  if (values.data)
    throw usage('--data is for a single server; a cluster instance stores plans in PostgreSQL.');
  // Loaded only here: a single server needs neither client.
  const { connectCluster } = await import('./cluster/index.js');
  return connectCluster({ redisUrl, postgresUrl, claims: { absentMs: leaseMs } });
}

async function token(args: string[], io: CliIO): Promise<number> {
  const values = parseOptions(args, {
    plan: { type: 'string' },
    role: { type: 'string' },
    sub: { type: 'string' },
    ttl: { type: 'string' },
    'secret-file': { type: 'string' },
  });
  if (!values.plan) throw usage('--plan is required: a plan id, or a pattern like "acme:*".');
  if (!values.role || !(ROLES as readonly string[]).includes(values.role)) {
    throw usage(`--role must be one of ${ROLES.join(', ')}${values.role ? `, not "${values.role}"` : ''}.`);
  }
  const secret = readSecret(values, io);
  if (!secret) {
    throw new CairnError(
      'invalid_argument',
      'No secret: set CAIRN_SECRET or pass --secret-file (the same as the server).',
    );
  }
  const ttl = values.ttl ?? '1h';
  const signed = await signToken(
    secret,
    { plan: values.plan, role: values.role as Role, ...(values.sub ? { sub: values.sub } : {}) },
    { ttl: /^\d+$/.test(ttl) ? Number(ttl) : ttl },
  );
  io.stdout(`${signed}\n`);
  return 0;
}
