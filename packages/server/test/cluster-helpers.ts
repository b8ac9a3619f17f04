// Cluster test parts: a real redis-server and PostgreSQL per test file, and instances of the server on free ports
// joined through them (each with its own connections, as separate processes would have).
import { afterAll, beforeAll } from 'vitest';
import { SOURCE_CLI_ARGS } from '../../../test/source-cli.js';
import { type Cluster, type ClusterOptions, connectCluster } from '../src/cluster/index.js';
import type { CairnServerOptions } from '../src/index.js';
import { type Child, start } from './child-server.js';
import { startServer, type TestServer } from './helpers.js';
import { type Service, startPostgres, startRedis } from './services.js';

export interface ClusterServices {
  redis: Service;
  postgres: Service;
}

/** Starts redis-server (`persist`: AOF with fsync always) and PostgreSQL before the file's tests, stops them after. */
export function useClusterServices(options: { persistRedis?: boolean } = {}): ClusterServices {
  const services = {} as ClusterServices;
  beforeAll(async () => {
    [services.redis, services.postgres] = await Promise.all([
      startRedis({ persist: options.persistRedis ?? false }),
      startPostgres(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled([services.redis?.destroy(), services.postgres?.destroy()]);
  });
  return services;
}

export interface ClusterInstance extends TestServer {
  cluster: Cluster;
}

/** One instance of the cluster on a free port (or `port`, for a restart). */
export async function startInstance(
  services: ClusterServices,
  options: CairnServerOptions & { port?: number; cluster?: Partial<ClusterOptions> } = {},
): Promise<ClusterInstance> {
  const { cluster: clusterOptions, ...serverOptions } = options;
  const cluster = await connectCluster({
    redisUrl: services.redis.url,
    postgresUrl: services.postgres.url,
    ...clusterOptions,
  });
  const base = cluster.serverOptions;
  const server = await startServer({
    ...serverOptions,
    ...base,
    // A test's own wake-up, claim and auto-close settings (a clock, no timer) join the cluster's.
    wake: serverOptions.wake === false ? false : { ...base.wake, ...serverOptions.wake },
    claims: serverOptions.claims === false ? false : { ...base.claims, ...serverOptions.claims },
    autoClose: { ...base.autoClose, ...serverOptions.autoClose },
    learning: serverOptions.learning === false ? false : { ...base.learning, ...serverOptions.learning },
  });
  return { ...server, cluster };
}

/** One instance as its own `cairn serve` process (so it can be killed with kill -9) on `port`. */
export function serveChild(
  services: ClusterServices,
  port: number,
  extraArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<Child> {
  return start(
    [
      ...SOURCE_CLI_ARGS,
      'serve',
      '--port',
      String(port),
      '--static',
      'none',
      '--redis',
      services.redis.url,
      '--postgres',
      services.postgres.url,
      ...extraArgs,
    ],
    env,
  );
}
