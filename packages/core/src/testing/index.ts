// @cairn/core/testing: acceptance suites that adapters run with vitest (storage now; sync later).
export type { StorageHarness, StorageSetup } from './storage-suite.js';
export { runStorageAdapterTests } from './storage-suite.js';
