/**
 * @cairn/server/cloudflare: Cairn's sync server as a Cloudflare Worker with one Durable Object per plan.
 *
 * ```ts
 * // src/index.ts of your worker
 * export { CairnPlanObject } from '@cairn/server/cloudflare';
 * export { cairnWorker as default } from '@cairn/server/cloudflare';
 * ```
 * The wrangler config binds `CAIRN_PLANS` to `CairnPlanObject` (a `new_sqlite_classes` migration). Design:
 * docs/decisions/041-durable-object-host.md.
 */
export type { CairnWorkerEnv } from './env.js';
export { CairnPlanObject } from './plan-object.js';
export type { SqliteByteAdapterOptions } from './sqlite-adapter.js';
export { SQLITE_DEFAULT_CHUNK_BYTES, SQLITE_SCHEMA_VERSION, SqliteByteAdapter } from './sqlite-adapter.js';
export type { SqlitePlanStoreOptions } from './sqlite-store.js';
export { SqlitePlanStore } from './sqlite-store.js';
export { cairnWorker, planOfPath } from './worker.js';
