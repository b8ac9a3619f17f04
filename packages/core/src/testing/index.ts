// @cairn/core/testing: acceptance suites that adapters run with vitest (storage now; sync later), and helpers
// for tests that wait on a plan.
export type { ByteAdapterHarness, ByteAdapterSetup } from './byte-adapter-suite.js';
export { runByteAdapterTests } from './byte-adapter-suite.js';
export type {
  DamageHarness,
  DamageOpen,
  DamageSetup,
  PlanFileBytes,
  StorageDamage,
} from './damage-suite.js';
export { damageFiles, runStorageDamageTests } from './damage-suite.js';
export type { MemoryByteAdapter } from './memory-adapter.js';
export { memoryByteAdapter } from './memory-adapter.js';
export type { StorageHarness, StorageSetup, StorageSuiteOptions } from './storage-suite.js';
export { runStorageAdapterTests } from './storage-suite.js';
export { until } from './until.js';
