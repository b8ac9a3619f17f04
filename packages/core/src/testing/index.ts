// @cairn/core/testing: acceptance suites that adapters run with vitest (storage now; sync later), and helpers
// for tests that wait on a plan.

// Also from `@cairn/core`: here beside the suite an adapter runs, where its tests import it from.
export { type MemoryByteAdapter, memoryByteAdapter } from '../persistence/memory-adapter.js';
export type { ByteAdapterHarness, ByteAdapterSetup } from './byte-adapter-suite.js';
export { runByteAdapterTests } from './byte-adapter-suite.js';
export type {
  DamageHarness,
  DamageOpen,
  DamageSetup,
  PlanFileBytes,
  StorageDamage,
} from './damage-suite.js';
export { damageFiles, openOrRefused, runStorageDamageTests } from './damage-suite.js';
export type { StorageHarness, StorageSetup, StorageSuiteOptions } from './storage-suite.js';
export { runStorageAdapterTests } from './storage-suite.js';
export { until } from './until.js';
