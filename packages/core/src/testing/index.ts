// @cairn/core/testing: acceptance suites that adapters run with vitest (storage now; sync later), and helpers
// for tests that wait on a plan.
export type { StorageHarness, StorageSetup, StorageSuiteOptions } from './storage-suite.js';
export { runStorageAdapterTests } from './storage-suite.js';
export { until } from './until.js';
