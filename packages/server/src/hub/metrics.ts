// The hub's metrics, in one place so /metrics and the code that counts agree on names; the update counters
// are an extension of the hub.
import { LATENCY_BUCKETS, type MetricsRegistry } from '../metrics.js';
import type { StoreMetrics } from '../store/store.js';
import type { Extension } from './extension.js';

export type HubMetrics = ReturnType<typeof createHubMetrics>;

export function createHubMetrics(
  registry: MetricsRegistry,
  read: { connections: () => number; rooms: () => number },
) {
  registry.gauge('cairn_connections', 'Open sync connections.', read.connections);
  registry.gauge('cairn_rooms', 'Plans loaded in memory.', read.rooms);
  return {
    registry,
    connectionsTotal: registry.counter('cairn_connections_total', 'Sync connections accepted.'),
    refusedTotal: registry.counter('cairn_connections_refused_total', 'Sync connections refused, by reason.'),
    closedTotal: registry.counter(
      'cairn_connections_closed_total',
      'Connections the server closed, by close code.',
    ),
    messagesTotal: registry.counter('cairn_messages_total', 'Messages received, by type.'),
    updatesTotal: registry.counter(
      'cairn_updates_total',
      'Document updates applied (from clients or the server).',
    ),
    updateBytesTotal: registry.counter('cairn_update_bytes_total', 'Bytes of document updates applied.'),
    refusedUpdatesTotal: registry.counter('cairn_updates_refused_total', 'Updates refused, by reason.'),
    acksTotal: registry.counter('cairn_acks_total', 'Write acknowledgements answered, by result.'),
    errorsTotal: registry.counter('cairn_errors_total', 'Errors, by kind.'),
    plansEvictedTotal: registry.counter(
      'cairn_plans_evicted_total',
      'Plans unloaded before their idle time to stay within the cap on loaded plans.',
    ),
    storeSeconds: registry.histogram(
      'cairn_store_duration_seconds',
      'Latency of store operations, by operation.',
      LATENCY_BUCKETS,
    ),
  };
}

/** The store's own figures, read when /metrics is rendered: a gauge is a level, a counter only grows. */
const STORE_METRICS: ReadonlyArray<
  [kind: 'gauge' | 'counterFrom', name: string, help: string, figure: keyof StoreMetrics]
> = [
  ['gauge', 'cairn_store_plans', 'Plans the store holds open.', 'plans'],
  ['gauge', 'cairn_store_bytes', 'Bytes the store holds for open plans.', 'bytes'],
  ['counterFrom', 'cairn_store_appends_total', 'Updates appended to the store.', 'appends'],
  ['counterFrom', 'cairn_store_compactions_total', 'Compactions the store ran.', 'compactions'],
  ['counterFrom', 'cairn_store_errors_total', 'Failed store writes, fsyncs and compactions.', 'errors'],
  [
    'gauge',
    'cairn_store_damaged_logs',
    'Plans refused because their log is damaged (see /healthz; `cairn log inspect` / `cairn log repair`).',
    'damagedLogs',
  ],
  [
    'counterFrom',
    'cairn_store_torn_tails_total',
    'Incomplete last records (writes cut short by a crash) cut off logs at load.',
    'tornTails',
  ],
];

export function registerStoreMetrics(registry: MetricsRegistry, read: () => StoreMetrics): void {
  for (const [kind, name, help, figure] of STORE_METRICS) registry[kind](name, help, () => read()[figure]);
}

/** Counts every update applied to a loaded plan, whatever its origin. */
export function updateMetrics(metrics: HubMetrics): Extension {
  return {
    name: 'metrics',
    change({ update }) {
      metrics.updatesTotal.inc();
      metrics.updateBytesTotal.inc({}, update.byteLength);
    },
  };
}
