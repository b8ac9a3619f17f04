// The byte contract's acceptance suite over the adapters that run in Node.
import { memoryByteAdapter, runByteAdapterTests } from '@cairn/core/testing';

runByteAdapterTests('memory', () => {
  const adapter = memoryByteAdapter();
  // One Map is the storage: a "second process" is the same adapter, whose lock refuses a held document.
  return { adapter, reopen: () => adapter, secondLock: 'locked' };
});
