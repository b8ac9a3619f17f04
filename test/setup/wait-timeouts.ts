// Every test file starts here: waits get a default suited to a loaded 2-core machine. vitest's own default for
// `vi.waitFor` (1 s) turns a slow moment into a failure; it has no config option, so the default is set here.
import { vi } from 'vitest';

/** The timeout of a `vi.waitFor` that names none (one that names its own keeps it). */
export const WAIT_TIMEOUT_MS = 10_000;

const waitFor = vi.waitFor;
vi.waitFor = ((callback, options) =>
  waitFor(
    callback,
    typeof options === 'number' ? options : { timeout: WAIT_TIMEOUT_MS, ...options },
  )) as typeof vi.waitFor;
