// What changed since a point the caller kept, as attributed lines ("task 3 "Write tests" done by agent:b"), so
// an agent learns what others did since its last turn without re-reading the plan. '' when nothing changed.
import { type ChangePoint, changesSince, type TaskDelta } from '../changes-since.js';
import type { Plan } from '../plan.js';
import type { Actor, Status } from '../schema.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';
import { inline } from './view.js';

/** Since when, and whose changes to leave out: the options of `renderDelta`. */
export interface DeltaOptions {
  /** The point to compare with: a state vector, a Y.Snapshot or a plan.toJSON() snapshot (see changesSince). */
  since: ChangePoint;
  /** Leave out changes by these actors (usually the reader, who knows what it did itself). */
  exclude?: Actor | readonly Actor[];
  /** Name tasks by integer alias ("task 3", the default), by id ("task k3x9a2b") or both ("task 3 [k3x9a2b]"). */
  ids?: 'num' | 'id' | 'both';
  /** How actors are named ("by Ann" rather than "by user:nd17n7"). Default: the actor ids. */
  nameOf?: (actor: Actor) => string;
  /** Keep the text within this many tokens, ending with "and N more changes". Default: no limit. */
  maxTokens?: number;
  tokenizer?: Tokenizer;
  /** The first line. Default "Changes since your last turn:". */
  header?: string;
}

const STATUS_VERBS: Record<Status, string> = {
  pending: 'reopened',
  in_progress: 'started',
  waiting_user: 'now waiting on user',
  waiting_external: 'now waiting on external',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  skipped: 'skipped',
};

/** Field names as a reader would say them. */
const FIELD_WORDS: Record<string, string> = {
  rank: 'position',
  parent: 'parent',
  blockedBy: 'dependencies',
  nextStep: 'next step',
  activeForm: 'active form',
  wakeAt: 'wake time',
  supersededBy: 'superseded by',
  num: 'number',
};

/**
 * The text telling a model what changed in the plan since a point (added, closed, edited tasks), within a
 * token budget; '' when nothing did.
 */
export function renderDelta(plan: Plan, options: DeltaOptions): string {
  const excluded = new Set(typeof options.exclude === 'string' ? [options.exclude] : (options.exclude ?? []));
  const deltas = changesSince(plan, options.since).filter((d) => !excluded.has(d.actor));
  if (deltas.length === 0) return '';
  const nameOf = options.nameOf ?? ((actor: Actor) => actor);
  const lines = deltas.map((d) => `- ${describe(d, options.ids ?? 'num', nameOf)}`);
  const header = options.header ?? 'Changes since your last turn:';
  const text = (n: number) =>
    [
      header,
      ...lines.slice(0, n),
      ...(n < lines.length ? [`- and ${lines.length - n} more changes`] : []),
    ].join('\n');
  const max = options.maxTokens;
  if (max === undefined) return text(lines.length);
  const tokenizer = options.tokenizer ?? defaultTokenizer;
  if (tokenizer.count(text(lines.length)) <= max) return text(lines.length);
  // The most lines that fit, by bisection (the text grows with n).
  let lo = 0;
  let hi = lines.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (tokenizer.count(text(mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return text(lo);
}

function describe(delta: TaskDelta, ids: 'num' | 'id' | 'both', nameOf: (actor: Actor) => string): string {
  const task = delta.task ?? delta.before;
  const name =
    ids === 'id' || delta.num === null
      ? `task ${inline(delta.id)}`
      : ids === 'both'
        ? `task ${delta.num} [${inline(delta.id)}]`
        : `task ${delta.num}`;
  const title = task ? ` ${JSON.stringify(inline(task.title))}` : '';
  const by = `by ${inline(nameOf(delta.actor))}`;
  // A task added as anything but pending says so: one line per task, so "added" alone would hide a later "done".
  if (delta.kind === 'added') {
    const status = delta.task && delta.task.status !== 'pending' ? ` (${delta.task.status})` : '';
    return `${name}${title} added ${by}${status}`;
  }
  if (delta.kind === 'removed') return `${name}${title} removed ${by}`;
  // A field outside the schema is a key another writer put in the task's map: it cannot add lines either.
  const others = delta.fields.filter((f) => f !== 'status').map((f) => FIELD_WORDS[f] ?? inline(f));
  if (delta.fields.includes('status') && delta.task) {
    const also = others.length > 0 ? ` (also changed: ${others.join(', ')})` : '';
    return `${name}${title} ${STATUS_VERBS[delta.task.status]} ${by}${also}`;
  }
  return `${name}${title} changed ${by}: ${others.join(', ')}`;
}
