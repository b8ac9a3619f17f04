// The agents runner (`cairn agents`): N agents in one Node process, each on its own replica and socket, sharing
// one plan through a Cairn server. One splits the goal into a dependency graph; all of them claim ready tasks
// (claimNext, arbitrated by the server), report progress into the steps, complete them, and stop when the plan
// is done. Presence says what each works on. The work is simulated, or done by a model when one is configured.
import {
  CairnError,
  createPlan,
  createToolkit,
  isOpenStatus,
  isToolError,
  type Plan,
  type PlanSnapshot,
  type TaskSnapshot,
  type Toolkit,
} from '@cairn/core';
import { traceDocId, traceRecorder } from '@cairn/core/learning';
import { sinceLastCallFeed } from '@cairn/core/protocol';
import { connectPlan, type PlanConnection, type Presence } from '@cairn/core/websocket';
import { WebSocket } from 'ws';
import * as Y from 'yjs';
import { splitGoal } from './agents/goal.js';
import { type LlmOptions, planWithModel, workWithModel } from './agents/llm.js';

export interface AgentsOptions {
  /** The Cairn server, `ws://` or `http://`. */
  url: string;
  planId: string;
  /** How many agents (1 to 64). */
  count: number;
  /**
   * One token for every agent (its subject runs them: they act as `agent:<sub>/<n>`), or a token per actor.
   * Without one the server must be open, and the agents are `agent:worker-<n>`.
   */
  token?: string | ((actor: string) => string | Promise<string>);
  /** Actors of the agents. Default: from the token's subject, else `agent:worker-1` .. `agent:worker-N`. */
  actors?: string[];
  /** What to split when the plan is empty. Default "Launch the product". */
  goal?: string;
  /** How many top-level tasks the split makes. Default 12. */
  tasks?: number;
  /** Simulated time per step, in ms: a random value in [min, max]. Default [200, 1200]. */
  workMs?: [number, number];
  /** A model to plan and work with; null (default) simulates. */
  llm?: LlmOptions | null;
  /** Randomness for the split and the durations. Default Math.random. */
  random?: () => number;
  /** Told of every event as it happens (the CLI prints them). */
  onEvent?: (event: AgentEvent) => void;
  /** Stops the agents after their current step. */
  signal?: AbortSignal;
  /** Give up if the plan is not done by then. Default: never. */
  timeoutMs?: number;
}

export type AgentEventType = 'planned' | 'claimed' | 'step' | 'done' | 'stopped';

export interface AgentEvent {
  /** Order of the event in this process. */
  seq: number;
  at: number;
  agent: string;
  type: AgentEventType;
  taskId?: string;
  title?: string;
  /** planned: how many tasks; claimed: the tasks it waited on. */
  detail?: string;
}

export interface AgentsReport {
  planId: string;
  agents: Array<{
    actor: string;
    /** Top-level tasks this agent completed, in order. */
    done: string[];
    /** Its replica's plan when it stopped. */
    snapshot: PlanSnapshot;
    /** Its replica's state vector when it stopped. */
    stateVector: Uint8Array;
  }>;
  events: AgentEvent[];
}

interface Agent {
  actor: string;
  plan: Plan;
  connection: PlanConnection;
  /** Its progress goes through the tools, so each call is in the plan's trace (learned procedures). */
  toolkit: Toolkit;
  /** The plan's trace document, synced in its own room. */
  traces: PlanConnection;
  presence: Presence;
  done: string[];
  /** What the other agents did since this one last asked its model, told to the model with the next step. */
  news: { next(): string };
}

/** Runs the agents until every top-level task of the plan is closed (or the signal / timeout stops them). */
export async function runAgents(options: AgentsOptions): Promise<AgentsReport> {
  const count = options.count;
  if (!Number.isInteger(count) || count < 1 || count > 64) {
    throw new CairnError('invalid_argument', `count must be an integer from 1 to 64, not ${count}.`);
  }
  const random = options.random ?? Math.random;
  const [minMs, maxMs] = options.workMs ?? [200, 1200];
  if (!(minMs >= 0 && maxMs >= minMs)) {
    throw new CairnError(
      'invalid_argument',
      `workMs must be [min, max] with 0 <= min <= max, not [${minMs}, ${maxMs}].`,
    );
  }
  const actors = options.actors ?? defaultActors(count, options.token);
  if (actors.length !== count || new Set(actors).size !== count) {
    throw new CairnError('invalid_argument', `Give ${count} distinct actors, one per agent.`);
  }
  const events: AgentEvent[] = [];
  const emit = (event: Omit<AgentEvent, 'seq' | 'at'>) => {
    const full = { seq: events.length + 1, at: Date.now(), ...event };
    events.push(full);
    options.onEvent?.(full);
  };
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort);
  const timer = options.timeoutMs ? setTimeout(onAbort, options.timeoutMs) : null;

  const agents = await Promise.all(actors.map((actor, i) => join(options, actor, i)));
  try {
    const planner = agents[0]!;
    if (planner.plan.list().length === 0) {
      const goal = options.goal ?? 'Launch the product';
      const tasks = options.tasks ?? 12;
      const added = options.llm
        ? await planWithModel(options.llm, planner.plan, goal, tasks)
        : planner.plan.addMany(splitGoal(goal, tasks, random)).length;
      emit({ agent: planner.actor, type: 'planned', detail: `${added} tasks for "${goal}"` });
    }
    const work = (agent: Agent) =>
      runOne(agent, {
        emit,
        signal: stop.signal,
        stepMs: () => minMs + random() * (maxMs - minMs),
        llm: options.llm ?? null,
      });
    await Promise.all(agents.map(work));
    if (options.timeoutMs && stop.signal.aborted && !options.signal?.aborted) {
      throw new CairnError('limit', `The plan was not done within ${options.timeoutMs} ms.`);
    }
    // Every agent's edits are stored before it reports (an agent about to exit waits for the server).
    await Promise.all(
      agents.flatMap((a) => [
        a.connection.whenAcknowledged(),
        // A trace the server refuses must not fail a finished run.
        a.traces.whenAcknowledged().catch(() => undefined),
      ]),
    );
    return {
      planId: options.planId,
      agents: agents.map((a) => ({
        actor: a.actor,
        done: a.done,
        snapshot: a.plan.toJSON(),
        stateVector: Y.encodeStateVector(a.plan.doc),
      })),
      events,
    };
  } finally {
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    for (const agent of agents) {
      agent.toolkit.destroy();
      agent.traces.destroy();
      agent.connection.destroy();
      agent.plan.destroy();
    }
  }
}

async function join(options: AgentsOptions, actor: string, index: number): Promise<Agent> {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor });
  const token = typeof options.token === 'function' ? await options.token(actor) : options.token;
  const presence: Presence = { id: actor, name: `worker ${index + 1}`, kind: 'agent', activeTask: null };
  const connection = connectPlan(doc, {
    url: options.url,
    planId: options.planId,
    ...(token ? { token } : {}),
    WebSocketPolyfill: WebSocket,
    plan,
    presence,
  });
  const traceDoc = new Y.Doc();
  const traces = connectPlan(traceDoc, {
    url: options.url,
    planId: traceDocId(options.planId),
    ...(token ? { token } : {}),
    WebSocketPolyfill: WebSocket,
  });
  try {
    await connection.whenSynced(15_000);
  } catch (error) {
    traces.destroy();
    connection.destroy();
    plan.destroy();
    throw error;
  }
  const toolkit = createToolkit(plan, { actor, onCall: traceRecorder(traceDoc) });
  return { actor, plan, connection, toolkit, traces, presence, done: [], news: sinceLastCallFeed(plan) };
}

interface RunContext {
  emit: (event: Omit<AgentEvent, 'seq' | 'at'>) => void;
  signal: AbortSignal;
  stepMs: () => number;
  llm: LlmOptions | null;
}

/**
 * One agent's loop: claim the next top-level task it can take on with its steps, work it, repeat; wait for
 * changes when there is none.
 */
async function runOne(agent: Agent, ctx: RunContext): Promise<void> {
  const { plan } = agent;
  while (!ctx.signal.aborted) {
    if (plan.list().length > 0 && plan.children(null).every((t) => !isOpenStatus(t.status))) break;
    const changed = nextChange(plan, ctx.signal);
    const next = nextWithSteps(plan, agent.actor);
    let result = next ? await plan.claim(next.id) : await plan.claimNext({ parent: null });
    if (result.outcome === 'tentative' && result.settled) result = await result.settled;
    if (result.outcome === 'won' && result.taskId) {
      await work(agent, result.taskId, ctx);
      continue;
    }
    // Nothing ready for now: blocked tasks wait on others' work, or the plan is still being split.
    await changed;
  }
  ctx.emit({ agent: agent.actor, type: 'stopped', detail: `${agent.done.length} tasks done` });
}

/**
 * The first top-level task nobody holds whose only wait is on its own open steps: this runner's agents take a
 * task together with its steps (claimed explicitly, since claimNext hands out only ready tasks, and a task with
 * open steps is not ready).
 */
function nextWithSteps(plan: Plan, actor: string): TaskSnapshot | undefined {
  return plan
    .children(null)
    .find(
      (t) =>
        isOpenStatus(t.status) &&
        (t.assignee === null || t.assignee === actor) &&
        plan.blockedTask(t.id)?.reason === 'waiting_on_steps',
    );
}

async function work(agent: Agent, taskId: string, ctx: RunContext): Promise<void> {
  const { plan } = agent;
  const task = plan.require(taskId);
  ctx.emit({
    agent: agent.actor,
    type: 'claimed',
    taskId,
    title: task.title,
    ...(task.blockedBy.length > 0 ? { detail: `after ${task.blockedBy.join(', ')}` } : {}),
  });
  setActive(agent, taskId);
  for (const step of plan.children(taskId)) {
    if (ctx.signal.aborted) break;
    if (!isOpenStatus(step.status)) continue;
    await update(agent, [
      { id: step.id, status: 'in_progress' },
      { id: taskId, nextStep: step.title },
    ]);
    const note = ctx.llm
      ? await workWithModel(ctx.llm, agent.actor, task.title, step.title, agent.news.next())
      : await delay(ctx.stepMs(), ctx.signal);
    await update(agent, [{ id: step.id, status: 'done', ...(note ? { note } : {}) }]);
    ctx.emit({ agent: agent.actor, type: 'step', taskId: step.id, title: step.title });
  }
  if (ctx.signal.aborted) {
    await plan.release(taskId).catch(() => undefined); // leave it to others, or to the next run
  } else {
    await update(agent, [{ id: taskId, status: 'done', nextStep: null }]);
    agent.done.push(taskId);
    ctx.emit({ agent: agent.actor, type: 'done', taskId, title: task.title });
  }
  setActive(agent, null);
}

/** One `update_tasks` call; a refusal (someone removed the task meanwhile) is thrown as the CairnError it is. */
async function update(agent: Agent, updates: Array<Record<string, unknown>>): Promise<void> {
  const result = await agent.toolkit.dispatch('update_tasks', { updates });
  if (isToolError(result)) throw new CairnError(result.error.code, result.error.message);
}

function setActive(agent: Agent, taskId: string | null): void {
  agent.presence = { ...agent.presence, activeTask: taskId };
  agent.connection.setPresence(agent.presence);
}

/** Resolves on the plan's next change (local or remote), or when stopped. */
function nextChange(plan: Plan, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      off();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const off = plan.onChange(done);
    signal.addEventListener('abort', done);
  });
}

function delay(ms: number, signal: AbortSignal): Promise<null> {
  return new Promise((resolve) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve(null);
    }
    signal.addEventListener('abort', finish);
  });
}

/** `agent:<sub>/<n>` for a token (the server lets its subject run them), else `agent:worker-<n>`. */
export function defaultActors(count: number, token: AgentsOptions['token']): string[] {
  const sub = typeof token === 'string' ? tokenSubject(token) : null;
  if (typeof token === 'string' && sub?.startsWith('user:')) {
    throw new CairnError(
      'invalid_argument',
      `The token's subject is ${sub}, a person; agents need a token whose subject is a name or "agent:<name>".`,
    );
  }
  const base = sub ? (sub.startsWith('agent:') ? sub : `agent:${sub}`) : 'agent:worker';
  return Array.from({ length: count }, (_, i) => (sub ? `${base}/${i + 1}` : `${base}-${i + 1}`));
}

/** The token's `sub`, read without verifying (the server verifies). */
function tokenSubject(token: string): string | null {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      sub?: unknown;
    };
    return typeof payload.sub === 'string' && payload.sub ? payload.sub : null;
  } catch {
    return null;
  }
}
