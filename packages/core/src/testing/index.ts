// @cairn/core/testing: acceptance suites that adapters run with vitest (the byte contract, damaged storage), and helpers
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
export { until } from './until.js';
