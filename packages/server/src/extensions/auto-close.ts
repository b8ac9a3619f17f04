// Auto-close (seed 001): after a turn, a judge rates every open task of the plan against the latest exchange
// (completed? abandoned?) and a task rated at >= 0.75 is closed as done or cancelled by the actor `auto_close`.
// The judge is pluggable; `chatCompletionsJudge` asks any OpenAI-compatible chat-completions endpoint.
import {
  CairnError,
  type Chat,
  type ChatEntry,
  createChat,
  createPlan,
  isOpenStatus,
  type TaskSnapshot,
} from '@cairn/core';
import { describeIssues, toCairnError } from '@cairn/core/protocol';
import type * as Y from 'yjs';
import * as z from 'zod';
import { askForJson, type ChatCompletionsEndpoint, clip, endpointFromEnv } from '../chat-completions.js';
import { Emitter } from '../emitter.js';
import type { DueQueue } from '../hub/due-times.js';
import type { Extension, ExtensionHost, PlanRoom } from '../hub/extension.js';
import { describeError, type Logger, silentLogger } from '../log.js';
import type { Counter } from '../metrics.js';

/** A task as the judge sees it. */
export interface JudgeTask {
  id: string;
  title: string;
  status: string;
  nextStep: string | null;
  steps: Array<{ title: string; status: string }>;
}

/** The latest exchange: the last user message and every assistant message after it. */
export interface JudgeExchange {
  user: string | null;
  assistant: string[];
  toolCalls: Array<{ name: string; arguments: string; result?: string }>;
}

export interface JudgeRequest {
  planId: string;
  tasks: JudgeTask[];
  exchange: JudgeExchange;
}

/**
 * Rates tasks. Resolves to `{ tasks: [{ id, completed, abandoned, reason? }] }` (probabilities in [0, 1]) or
 * that array; anything else is logged and ignored. May reject: the tasks then stay open.
 */
export interface Judge {
  /** For the log, e.g. the model's name. */
  readonly name: string;
  judge(request: JudgeRequest, signal: AbortSignal): Promise<unknown>;
}

/** The judgement of one task and what came of it. */
export interface TaskJudgement {
  planId: string;
  taskId: string;
  title: string;
  completed: number;
  abandoned: number;
  reason: string | null;
  /** `done` / `cancelled`: closed now; `open`: left as it was (below the threshold, or closed meanwhile). */
  decision: 'done' | 'cancelled' | 'open';
  judge: string;
}

/** One run of the judge over a plan. */
export interface JudgeRun {
  planId: string;
  /** The assistant message that ended the judged turn, or null (no exchange yet). */
  messageId: string | null;
  judgements: TaskJudgement[];
  /** Ids of the tasks closed. */
  closed: string[];
  /** What was wrong with the judge's answer (entries dropped, or the whole answer): logged, nothing applied. */
  problems: string[];
  /** Set when the judge failed or answered nothing usable; no task was changed. */
  error: string | null;
  /** Why the judge was not asked: `no_open_tasks` or `no_exchange` (an empty chat); null when it was. */
  /** `elsewhere`: another server of the cluster judges this turn. */
  skipped: 'no_open_tasks' | 'no_exchange' | 'elsewhere' | null;
}

/** A line of the decision log: one judgement, as the server's log writes it (`task_close` at info level). */
export interface CloseDecision extends TaskJudgement {
  kind: 'task_close';
  /** When it was decided, ISO 8601. */
  at: string;
}

/** How many decisions are kept per plan, and for how many plans (the log is in memory, since the start). */
const DECISION_LOG = { perPlan: 200, plans: 1_000 } as const;

export interface AutoCloseEvents {
  /** One per task judged, as logged. */
  task_close: [TaskJudgement];
  /** One per run. */
  judged: [JudgeRun];
}

export interface AutoCloseOptions {
  judge: Judge;
  /** Close at this probability or more. Default 0.75. */
  threshold?: number;
  /** A turn counts as over once the chat has been quiet this long after a final assistant reply. Default 1.5 s. */
  settleMs?: number;
  /** At most this many open tasks (newest first) are judged per run. Default 20. */
  maxTasks?: number;
  /** Deadline of one judge call. Default 30 s. */
  timeoutMs?: number;
  logger?: Logger;
  /**
   * In a cluster: taken by exactly one server per turn, so each turn is judged once (cluster/jobs.ts); a turn
   * whose judging server died is judged by another once that server's lock lapsed.
   */
  once?: JobLock;
}

/** Takes a job for this server: true for exactly one caller per key until `ttlMs` has passed. */
export type RunOnce = (key: string, ttlMs: number) => Promise<boolean>;

/** A job lock that also knows which jobs are done, so a job whose taker died is taken again once its lock lapses. */
export interface JobLock extends RunOnce {
  /** Marks a job done: nobody takes it again for `keepMs`. */
  done(key: string, keepMs: number): Promise<void>;
  /** ms until the taker's lock lapses (0: nobody holds it); null when the job is done. */
  lapsesIn(key: string): Promise<number | null>;
}

/** How long a judged turn stays marked done: far longer than any server waits to take it again. */
const JUDGED_KEEP_MS = 60 * 60_000;

const PROBABILITY = z.number().min(0).max(1);
const JudgementSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  completed: PROBABILITY,
  abandoned: PROBABILITY,
  reason: z.string().max(2000).optional().nullable(),
});
const OUTPUT_SHAPE =
  '{ "tasks": [{ "id": string, "completed": 0..1, "abandoned": 0..1, "reason"?: string }] }';

/**
 * Reads a judge's answer: the valid entries for known tasks, and what was dropped. Throws CairnError
 * `invalid_argument` when the answer as a whole is not of the expected shape.
 */
export function parseJudgements(
  output: unknown,
  known: ReadonlySet<string>,
): { entries: Array<z.infer<typeof JudgementSchema>>; problems: string[] } {
  const list = Array.isArray(output)
    ? output
    : typeof output === 'object' && output !== null && Array.isArray((output as { tasks?: unknown }).tasks)
      ? (output as { tasks: unknown[] }).tasks
      : null;
  if (!list) {
    throw new CairnError('invalid_argument', `The judge's answer is not ${OUTPUT_SHAPE}.`, {
      valid: OUTPUT_SHAPE,
    });
  }
  const entries: Array<z.infer<typeof JudgementSchema>> = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, raw] of list.entries()) {
    const parsed = JudgementSchema.safeParse(raw);
    if (!parsed.success) {
      problems.push(`tasks[${i}]: ${describeIssues(parsed.error, { root: 'entry', max: 1 }).text}`);
      continue;
    }
    if (!known.has(parsed.data.id)) {
      problems.push(`tasks[${i}]: "${parsed.data.id}" is not one of the judged tasks`);
      continue;
    }
    if (seen.has(parsed.data.id)) {
      problems.push(`tasks[${i}]: "${parsed.data.id}" is judged twice; the first one counts`);
      continue;
    }
    seen.add(parsed.data.id);
    entries.push(parsed.data);
  }
  return { entries, problems };
}

/** The latest exchange of a chat, and the assistant message that ended it (null when there is none). */
export function latestExchange(messages: readonly ChatEntry[]): {
  exchange: JudgeExchange;
  endedBy: string | null;
} {
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role !== 'user') start--;
  const user = start > 0 ? messages[start - 1]!.text : null;
  const replies = messages.slice(start).filter((m) => m.role === 'assistant');
  return {
    exchange: {
      user,
      assistant: replies.map((m) => m.text).filter((text) => text.length > 0),
      toolCalls: replies.flatMap((m) =>
        (m.toolCalls ?? []).map((c) => ({
          name: c.name,
          arguments: clip(c.arguments, 2000),
          ...(c.result !== undefined ? { result: clip(c.result, 2000) } : {}),
        })),
      ),
    },
    endedBy: replies.at(-1)?.id ?? null,
  };
}

/** A final reply: an assistant message that called no tools (so the agent's turn is over). */
function finalReply(messages: readonly ChatEntry[]): ChatEntry | null {
  const last = messages.at(-1);
  return last?.role === 'assistant' && (last.toolCalls?.length ?? 0) === 0 ? last : null;
}

const MAX_REMEMBERED_PLANS = 10_000;

/** Auto-close is a hub extension: it watches each plan's chat as the plan loads, and stops when the hub closes. */
export class AutoCloser extends Emitter<AutoCloseEvents> implements Extension {
  readonly name = 'auto_close';
  readonly judgeName: string;
  private readonly judge: Judge;
  private readonly threshold: number;
  private readonly settleMs: number;
  private readonly maxTasks: number;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  /** The last final reply judged (or present at load) per plan, so a turn is judged once. */
  private readonly judged = new Map<string, string>();
  /** Turns waiting to settle, by plan (due-time index): the final reply that ended each, and its chat. */
  private readonly settling: DueQueue;
  private readonly turns = new Map<string, { chat: Chat; replyId: string }>();
  private readonly running = new Map<string, Promise<JudgeRun>>();
  private readonly chats = new WeakMap<Y.Doc, Chat>();
  private readonly decisions: Counter;
  private readonly decisionLog = new Map<string, CloseDecision[]>();
  private closed = false;
  private readonly runOnce: JobLock | null;
  /** Looks again at turns another server took, once its lock lapses (it may have died mid-judgement), by lock key. */
  private readonly retries: DueQueue;
  private readonly retrying = new Map<string, { planId: string; lock: JobLock }>();

  constructor(
    private readonly hub: ExtensionHost,
    options: AutoCloseOptions,
  ) {
    super();
    this.runOnce = options.once ?? null;
    this.judge = options.judge;
    this.judgeName = options.judge.name;
    this.threshold = options.threshold ?? 0.75;
    if (!(this.threshold > 0 && this.threshold <= 1)) {
      throw new CairnError('invalid_argument', 'threshold is a probability in (0, 1], e.g. 0.75.', {
        field: 'threshold',
      });
    }
    this.settleMs = options.settleMs ?? 1500;
    this.maxTasks = options.maxTasks ?? 20;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.logger = options.logger ?? silentLogger;
    this.settling = hub.dueTimes.queue('auto-close', (now) => this.settled(now));
    this.retries = hub.dueTimes.queue('auto-close-retry', (now) => this.retryDue(now));
    this.decisions = hub.registry.counter(
      'cairn_auto_close_judgements_total',
      'Tasks judged by auto-close, by decision (done, cancelled, open, error).',
    );
  }

  /**
   * Judges the plan's open tasks against its latest exchange now and closes those rated at the threshold or
   * more. Runs of one plan take turns. Resolves with what was judged; never rejects for a judge's failure.
   */
  run(planId: string): Promise<JudgeRun> {
    const previous = this.running.get(planId) ?? Promise.resolve(null);
    const next = previous
      .catch(() => null)
      .then(() => this.judgeOnce(planId))
      .finally(() => {
        if (this.running.get(planId) === next) this.running.delete(planId);
      });
    this.running.set(planId, next);
    return next;
  }

  /** The plan's decision log, oldest first: the last judgements since the server started. */
  decisionsOf(planId: string): CloseDecision[] {
    return [...(this.decisionLog.get(planId) ?? [])];
  }

  /**
   * Turns this server still has work for: settling, being judged, or taken by another server and looked at again
   * until judged (it judges them if that server died). 0: no judgement can start without a new turn.
   */
  get turnsInHand(): number {
    return this.settling.size + this.running.size + this.retrying.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.hub.dueTimes.remove(this.settling);
    this.hub.dueTimes.remove(this.retries);
    this.settling.clear();
    this.turns.clear();
    this.retries.clear();
    this.retrying.clear();
    await Promise.allSettled([...this.running.values()]);
  }

  // ------------------------------------------------------------------ the trigger

  loaded({ planId, doc }: PlanRoom): void {
    this.watch(planId, doc);
  }

  /** Watches a loaded plan's chat: a final reply that then stays quiet for `settleMs` ends a turn. */
  private watch(planId: string, doc: Y.Doc): void {
    if (this.closed || this.chats.has(doc)) return;
    const chat = createChat(doc, { actor: 'auto_close' });
    this.chats.set(doc, chat);
    // What was already there when the plan loaded was judged before (or predates this server).
    const present = finalReply(chat.list());
    if (present) this.remember(planId, present.id);
    chat.onChange(() => {
      if (this.closed) return;
      const reply = finalReply(chat.list());
      if (!reply || this.judged.get(planId) === reply.id) {
        this.settling.set(planId, null);
        this.turns.delete(planId);
        return;
      }
      this.turns.set(planId, { chat, replyId: reply.id });
      this.settling.set(planId, this.hub.dueTimes.now() + this.settleMs);
    });
  }

  /** Turns whose chat stayed quiet for `settleMs` after their final reply: judged. */
  private settled(now: number): void {
    for (const planId of this.settling.take(now)) {
      const turn = this.turns.get(planId);
      this.turns.delete(planId);
      if (this.closed || !turn || finalReply(turn.chat.list())?.id !== turn.replyId) continue;
      void this.run(planId);
    }
  }

  private retryDue(now: number): void {
    for (const key of this.retries.take(now)) {
      const retry = this.retrying.get(key);
      if (retry && !this.closed) void this.retryWhenLapsed(retry.planId, key, retry.lock);
    }
  }

  private remember(planId: string, messageId: string): void {
    this.judged.delete(planId);
    this.judged.set(planId, messageId);
    if (this.judged.size > MAX_REMEMBERED_PLANS) {
      const oldest = this.judged.keys().next().value;
      if (oldest !== undefined) this.judged.delete(oldest);
    }
  }

  // ------------------------------------------------------------------ a run

  private async judgeOnce(planId: string): Promise<JudgeRun> {
    const handle = await this.hub.openPlan(planId);
    const plan = createPlan({ doc: handle.doc, actor: 'auto_close' });
    const chat = createChat(handle.doc, { actor: 'auto_close' });
    const result: JudgeRun = {
      planId,
      messageId: null,
      judgements: [],
      closed: [],
      problems: [],
      error: null,
      skipped: null,
    };
    try {
      const { exchange, endedBy } = latestExchange(chat.list());
      result.messageId = endedBy;
      if (endedBy) this.remember(planId, endedBy);
      const tasks = openTopLevel(plan.children(null)).slice(0, this.maxTasks);
      if (tasks.length === 0 || (exchange.user === null && endedBy === null)) {
        result.skipped = tasks.length === 0 ? 'no_open_tasks' : 'no_exchange';
        return this.finish(result);
      }
      // Every server holding the plan saw the turn end; one judges it.
      const key = `auto-close:${planId}:${endedBy}`;
      const lock = endedBy ? this.runOnce : null;
      if (lock && !(await lock(key, this.timeoutMs * 2).catch(() => false))) {
        result.skipped = 'elsewhere';
        void this.retryWhenLapsed(planId, key, lock);
        return this.finish(result);
      }
      // Marked done only once the judgement is stored: a server dying before leaves the turn to another.
      const judged = async (run: JudgeRun): Promise<JudgeRun> => {
        await lock?.done(key, JUDGED_KEEP_MS).catch((error: unknown) => {
          this.logger.error('could not mark a judged turn done', {
            plan: planId,
            error: describeError(error),
          });
        });
        return run;
      };

      const request: JudgeRequest = {
        planId,
        tasks: tasks.map((t) => ({
          id: t.id,
          title: t.title,
          status: t.status,
          nextStep: t.nextStep,
          steps: plan.children(t.id).map((s) => ({ title: s.title, status: s.status })),
        })),
        exchange,
      };
      let output: unknown;
      try {
        output = await this.judge.judge(request, AbortSignal.timeout(this.timeoutMs));
      } catch (error) {
        return await judged(this.failed(result, `The judge failed: ${describeError(error)}`, 'judge_failed'));
      }
      let entries: ReturnType<typeof parseJudgements>['entries'];
      try {
        ({ entries, problems: result.problems } = parseJudgements(output, new Set(tasks.map((t) => t.id))));
      } catch (error) {
        return await judged(this.failed(result, toCairnError(error).message, 'judge_output', output));
      }
      if (result.problems.length > 0) {
        this.logger.warn('parts of the judge output were ignored', {
          plan: planId,
          problems: result.problems,
        });
      }

      // Closed in one transaction, each task checked again: it may have changed while the judge thought.
      handle.doc.transact(() => {
        for (const entry of entries) {
          const task = plan.get(entry.id);
          const decision = this.decide(entry.completed, entry.abandoned);
          const judgement: TaskJudgement = {
            planId,
            taskId: entry.id,
            title: task?.title ?? '',
            completed: entry.completed,
            abandoned: entry.abandoned,
            reason: entry.reason ?? null,
            decision: decision !== 'open' && task && isOpenStatus(task.status) ? decision : 'open',
            judge: this.judgeName,
          };
          if (judgement.decision !== 'open' && task) {
            const line = `Closed as ${judgement.decision} by auto_close (completed ${entry.completed}, abandoned ${entry.abandoned})${entry.reason ? `: ${entry.reason}` : '.'}`;
            try {
              plan.update(task.id, {
                status: judgement.decision,
                note: task.note ? `${task.note}\n${line}` : line,
              });
              result.closed.push(task.id);
            } catch (error) {
              judgement.decision = 'open';
              result.problems.push(`task ${task.id} could not be closed: ${toCairnError(error).message}`);
            }
          }
          result.judgements.push(judgement);
        }
      }, 'auto_close');
      if (result.closed.length > 0) await handle.flush();
      return await judged(this.finish(result));
    } finally {
      chat.destroy();
      plan.destroy();
      handle.release();
    }
  }

  /**
   * Another server took this turn: looks at its lock again when it would lapse, and once it lapsed without the
   * turn being done (the taker died), runs again, judging it unless another server took it first. Stops once the
   * turn is done, without loading the plan.
   */
  private async retryWhenLapsed(planId: string, key: string, lock: JobLock): Promise<void> {
    this.retrying.set(key, { planId, lock });
    let ms: number | null;
    try {
      ms = await lock.lapsesIn(key);
    } catch (error) {
      ms = this.timeoutMs * 2; // Redis away: look again after a whole lock's time
      this.logger.error('could not read a judging lock', { plan: planId, error: describeError(error) });
    }
    if (ms !== null && !this.closed) {
      if (ms > 0) {
        this.retries.set(key, this.hub.dueTimes.now() + ms + 50);
        return;
      }
      void this.run(planId);
    }
    this.retrying.delete(key);
  }

  private record(entry: CloseDecision): void {
    const log = this.decisionLog.get(entry.planId) ?? [];
    // Most recently judged plans last, so the oldest plan's log is the one dropped.
    this.decisionLog.delete(entry.planId);
    this.decisionLog.set(entry.planId, log);
    log.push(entry);
    if (log.length > DECISION_LOG.perPlan) log.splice(0, log.length - DECISION_LOG.perPlan);
    if (this.decisionLog.size > DECISION_LOG.plans) {
      const oldest = this.decisionLog.keys().next().value;
      if (oldest !== undefined) this.decisionLog.delete(oldest);
    }
  }

  private decide(completed: number, abandoned: number): TaskJudgement['decision'] {
    if (completed >= this.threshold && completed >= abandoned) return 'done';
    if (abandoned >= this.threshold) return 'cancelled';
    return 'open';
  }

  private failed(result: JudgeRun, error: string, kind: string, output?: unknown): JudgeRun {
    result.error = error;
    this.decisions.inc({ decision: 'error' });
    this.hub.metrics.errorsTotal.inc({ kind: `auto_close_${kind}` });
    this.logger.warn('auto-close judge output ignored; tasks stay open', {
      plan: result.planId,
      judge: this.judgeName,
      error,
      ...(output !== undefined ? { output: clip(safeJson(output), 500) } : {}),
    });
    this.emit('judged', [result]);
    return result;
  }

  private finish(result: JudgeRun): JudgeRun {
    for (const judgement of result.judgements) {
      this.decisions.inc({ decision: judgement.decision });
      const entry: CloseDecision = { kind: 'task_close', at: new Date().toISOString(), ...judgement };
      this.record(entry);
      this.logger.info('task_close', { ...entry });
      this.emit('task_close', [judgement]);
    }
    this.emit('judged', [result]);
    return result;
  }
}

/** Open top-level tasks (the conversation's tasks; their children are steps), newest first. */
function openTopLevel(tasks: readonly TaskSnapshot[]): TaskSnapshot[] {
  return tasks
    .filter((t) => isOpenStatus(t.status))
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
}

function safeJson(value: unknown): string {
  try {
    return typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

// ------------------------------------------------------------------ an OpenAI-compatible judge

export type ChatCompletionsJudgeOptions = ChatCompletionsEndpoint;

const JUDGE_PROMPT = [
  'You decide whether tasks of a conversation between a user and an assistant are finished.',
  'You get the open tasks and the latest exchange. For each task estimate two probabilities:',
  '- completed: the goal of the task was achieved (in this exchange or before);',
  '- abandoned: the user or the assistant dropped it (no longer wanted, replaced, refused, impossible).',
  'A task merely mentioned or in progress is neither. Judge only from what was said.',
  `Answer with one JSON object and nothing else: ${OUTPUT_SHAPE}, one entry per task, the reason one sentence.`,
].join('\n');

/** A judge that asks an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, ...). */
export function chatCompletionsJudge(options: ChatCompletionsJudgeOptions): Judge {
  return {
    name: options.model,
    judge(request, signal) {
      return askForJson(
        options,
        [
          { role: 'system', content: JUDGE_PROMPT },
          { role: 'user', content: JSON.stringify({ tasks: request.tasks, exchange: request.exchange }) },
        ],
        OUTPUT_SHAPE,
        signal,
      );
    },
  };
}

/**
 * The judge of the environment: CAIRN_JUDGE_URL (base URL) and CAIRN_JUDGE_MODEL, optionally CAIRN_JUDGE_KEY.
 * Null when neither is set (auto-close is off); a CairnError when only one is.
 */
export function judgeFromEnv(env: Record<string, string | undefined>): Judge | null {
  const endpoint = endpointFromEnv(env);
  return endpoint ? chatCompletionsJudge(endpoint) : null;
}
