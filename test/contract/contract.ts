// What every section of the server contract gets (suite.ts builds it): the running host, tokens signed with its
// secret, the judge's endpoint, and fresh plan ids.
import type { Role } from '@cairn/server';
import type { ChatCall, FakeLlm, LlmReply } from '../../packages/server/test/fake-llm.js';
import type { HostDifferences, RunningHost } from './host.js';

export const SECRET = 'contract-secret-contract-secret-0123456789';
/** The shortest lease `cairn serve` takes: the lease test waits for it once. */
export const LEASE_MS = 1000;
export const JUDGE_MODEL = 'judge-contract';

export interface Contract {
  /** The running host (started before the first test). */
  host(): RunningHost;
  /** A token for `plan` signed with the host's secret (`ttl` as `cairn token --ttl` takes it; default 1 h). */
  token(plan: string, role: Role, options?: { sub?: string; ttl?: string | number }): Promise<string>;
  /** The chat-completions endpoint behind the judge, the distiller and the model proxy: set `reply` to script it
   * (reset after each test); `calls` records what it was asked. */
  llm(): FakeLlm;
  /** What the host answers differently from `cairn serve` (`ContractHost.differences`). */
  differences: HostDifferences;
}

/** The path of the metrics that count `plan`'s traffic on this host: `/metrics`, or that plan's object's. */
export function metricsPath(contract: Contract, plan: string): string {
  return contract.differences.metricsPerPlan ? `/metrics?plan=${encodeURIComponent(plan)}` : '/metrics';
}

/** A fresh plan id per call, so tests sharing one host never share a plan. */
let plans = 0;
export function freshPlan(prefix = 'contract'): string {
  plans++;
  return `${prefix}:${plans}:${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * What the endpoint answers unless a test scripts it: the judge finds nothing finished, the distiller writes a
 * skill of the first tool its trace used, the proxied model says hello.
 */
export function defaultReply(call: ChatCall): LlmReply {
  const system = call.body.messages[0]?.content ?? '';
  if (system.startsWith('You decide whether tasks')) return { content: '{"tasks":[]}' };
  if (system.startsWith('You turn the tool calls')) {
    const tool = /"tool":"([a-z_]+)"/.exec(call.body.messages.at(-1)?.content ?? '')?.[1] ?? 'add_tasks';
    return {
      content: JSON.stringify({
        name: 'Book a table',
        triggers: ['book a table'],
        steps: [{ tool, args: { tasks: [{ title: '<string>' }] } }],
        pitfalls: [],
      }),
    };
  }
  return { content: 'hello from the model' };
}
