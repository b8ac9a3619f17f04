// What every section of the server contract gets (suite.ts builds it): the running host, tokens signed with its
// secret, the judge's endpoint, and fresh plan ids.
import type { Role } from '@cairn/server';
import type { FakeLlm } from '../../packages/server/test/fake-llm.js';
import type { RunningHost } from './host.js';

export const SECRET = 'contract-secret-contract-secret-0123456789';
/** The shortest lease `cairn serve` takes: the lease test waits for it once. */
export const LEASE_MS = 1000;
export const JUDGE_MODEL = 'judge-contract';

export interface Contract {
  /** The running host (started before the first test). */
  host(): RunningHost;
  /** A token for `plan` signed with the host's secret (`ttl` as `cairn token --ttl` takes it; default 1 h). */
  token(plan: string, role: Role, options?: { sub?: string; ttl?: string | number }): Promise<string>;
  /** The judge's endpoint: set `reply` to script it; `calls` records what it was asked. */
  judge(): FakeLlm;
}

/** A fresh plan id per call, so tests sharing one host never share a plan. */
let plans = 0;
export function freshPlan(prefix = 'contract'): string {
  plans++;
  return `${prefix}:${plans}:${Math.random().toString(36).slice(2, 8)}`;
}
