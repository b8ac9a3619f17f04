// @cairn/server/cluster: several `cairn serve` instances sharing plans through Redis, stored in PostgreSQL
// (docs/decisions/023). Node-only; loaded only when a cluster is configured, so the embedded default needs neither.
export type { PostgresStoreOptions } from './postgres-store.js';
export { POSTGRES_SCHEMA_VERSION, PostgresStore } from './postgres-store.js';
