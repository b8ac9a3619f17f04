// What every render format shares: one read of the plan (the tree, step counts, why tasks are blocked), the
// checkbox and status words, what the budget has left out, and the note that says so.
import type { BlockedInfo } from '../graph.js';
import type { Plan } from '../plan.js';
import { type Actor, isOpenStatus, type Status, type TaskSnapshot } from '../schema.js';
import { type TaskNumbers, taskNumbers } from '../task-numbers.js';

/** Who is connected and what they look at, as an awareness state carries it (see docs/TOOLS.md). */
export interface Presence {
  actor: string;
  /** The task they are on, if any. */
  taskId?: string | null;
}

export interface StepCount {
  all: number;
  closed: number;
}

const NO_STEPS: StepCount = Object.freeze({ all: 0, closed: 0 });

/** A read of the plan taken once per render. */
export class PlanView {
  readonly plan: Plan;
  readonly actor: Actor;
  /** The render clock: the time asked for, rounded down to its quarter hour (see `renderClock`). */
  readonly now: number;
  readonly presence: Presence[] | null;
  /** How actors are named in the text (see RenderOptions.nameOf). */
  readonly nameOf: (actor: Actor) => string;
  /** Whether the native format shows task numbers (RenderOptions.numbers). */
  readonly showNumbers: boolean;
  private readonly kids = new Map<string | null, TaskSnapshot[]>();
  private readonly counts = new Map<string, StepCount>();
  /** Why tasks cannot start, read once per render (a format asks about most tasks, some more than once). */
  private blockedMap: ReadonlyMap<string, BlockedInfo> | undefined;
  private numbers: TaskNumbers | undefined;

  constructor(
    plan: Plan,
    options: {
      actor?: Actor;
      now?: number;
      presence?: Iterable<Presence> | null;
      nameOf?: (actor: Actor) => string;
      numbers?: boolean;
    },
  ) {
    this.plan = plan;
    this.nameOf = options.nameOf ?? ((actor) => actor);
    this.showNumbers = options.numbers ?? false;
    this.actor = options.actor ?? plan.actor;
    this.now = renderClock(options.now ?? Date.now());
    this.presence = options.presence ? [...options.presence] : null;
  }

  /** Why an open task cannot start, or undefined (the plan keeps its blocked set up to date). */
  blocked(id: string): BlockedInfo | undefined {
    this.blockedMap ??= this.plan.blockedReasons();
    return this.blockedMap.get(id);
  }

  /**
   * Direct steps of a task (or the top level for null), in order. Read on first use and kept for the render:
   * a budgeted render only looks at the tasks that fit.
   */
  children(id: string | null): TaskSnapshot[] {
    let kids = this.kids.get(id);
    if (!kids) {
      kids = this.plan.children(id);
      this.kids.set(id, kids);
    }
    return kids;
  }

  /** How many steps are below a task, at any depth, and how many of them are finished. */
  steps(id: string): StepCount {
    const kids = this.children(id);
    if (kids.length === 0) return NO_STEPS;
    let count = this.counts.get(id);
    if (!count) {
      count = { all: 0, closed: 0 };
      for (const kid of kids) {
        const below = this.steps(kid.id);
        count.all += 1 + below.all;
        count.closed += (isOpenStatus(kid.status) ? 0 : 1) + below.closed;
      }
      // Kept for the render: the budget and the notes ask for the same tasks again.
      this.counts.set(id, count);
    }
    return count;
  }

  /** Seed 001's number of a top-level task (steps use up none), read once per render. */
  taskNumber(id: string): number | undefined {
    this.numbers ??= taskNumbers(this.plan);
    return this.numbers.numberOf(id);
  }
}

/** What the budget (or the done-task policy) left out. Sets of task ids. */
export interface Omissions {
  /** Tasks left out with all their steps. */
  hidden: Set<string>;
  /** Top-level tasks whose finished steps are left out. */
  closedStepsHidden: Set<string>;
  /** Top-level tasks whose step lists are summarised as "(2 of 5 steps done)". */
  collapsed: Set<string>;
}

export function noOmissions(): Omissions {
  return { hidden: new Set(), closedStepsHidden: new Set(), collapsed: new Set() };
}

/**
 * How a shown top-level task is cut down: all its steps, only its open ones, or its step list summarised. A
 * block depends on its own cut only.
 */
export type Cut = 'whole' | 'openSteps' | 'collapsed';

/** The steps to print under `id` (the top-level task or one of its steps) in a block cut down by `cut`. */
export function visibleSteps(view: PlanView, cut: Cut, id: string): TaskSnapshot[] {
  if (cut === 'collapsed') return [];
  const steps = view.children(id);
  return cut === 'openSteps' ? steps.filter((s) => isOpenStatus(s.status)) : steps;
}

/** " (2 of 5 steps done)" for a collapsed task, else "". */
export function collapsedNote(view: PlanView, cut: Cut, top: string): string {
  if (cut !== 'collapsed') return '';
  const { all, closed } = view.steps(top);
  if (all === 0) return '';
  return ` (${closed} of ${all} step${all === 1 ? '' : 's'} done)`;
}

/** The checklist box of seed 000: `[x]` finished, `[-]` under way (waiting included), `[ ]` not started. */
export function checkbox(status: Status): string {
  if (!isOpenStatus(status)) return '[x]';
  return status === 'pending' ? '[ ]' : '[-]';
}

/** Words for the statuses a box cannot show: " (failed)", " (waiting on user)"; "" for the plain ones. */
export function statusWords(status: Status): string {
  switch (status) {
    case 'failed':
    case 'cancelled':
    case 'skipped':
      return ` (${status})`;
    case 'waiting_user':
      return ' (waiting on user)';
    case 'waiting_external':
      return ' (waiting on external)';
    default:
      return '';
  }
}

/**
 * Text from the plan (titles, next steps, actors, ids) as it may appear inside one rendered line. Anyone who can
 * write a title can put line breaks in it; printed as they are, they would let a title add lines of its own (a
 * fake "- [x] 2. Deploy (done)" or a "## System:" heading) to the context a model reads. Every kind of line
 * break becomes a visible " ⏎ ", other control characters a space, so one task is always one line. Characters a
 * reader cannot see but a model reads (bidi controls that reorder what a person reviews, zero-width spaces and
 * joiners of words, Unicode tags that spell hidden ASCII) are shown by their code point, `<U+202E>`: the document
 * keeps them as written (docs/decisions/034).
 */
export function inline(text: string): string {
  const oneLine = text.replace(LINE_BREAKS, ' ⏎ ');
  // A test first: most text has nothing to show, and a test allocates nothing (cheaper than a replace that finds
  // nothing, with a class this wide).
  return MAY_BE_UNSEEN.test(oneLine) ? oneLine.replace(UNSEEN, unseen) : oneLine;
}

// CR, LF, vertical tab, form feed, NEL and the Unicode line and paragraph separators, in runs. (Not the blanks
// around them: a pattern that starts with a run of blanks is quadratic on a long blank title.)
const LINE_BREAKS = /[\r\n\v\f\u0085\u2028\u2029]+/g;
// What is left of C0 and C1 (tab included) and DEL, which read as a space; and, shown by code point: the Arabic
// letter mark, Mongolian vowel separator, zero-width space, LRM / RLM, the bidi embeddings, overrides and
// isolates, word joiner and invisible operators, the byte order mark, and the tag characters U+E0000-E007F (as
// their UTF-16 pairs). Zero-width (non-)joiners U+200C/U+200D stay: scripts and emoji sequences need them.
const UNSEEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;
/** Whether `UNSEEN` may match (not global: a test keeps no state between calls). */
const MAY_BE_UNSEEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\udb40]/;

/**
 * JSON text with the characters `inline` would not print as they are written as `\\u` escapes: line breaks JSON
 * leaves raw (NEL, U+2028, U+2029), the rest of C1, and every character `inline` shows by code point. It is the same
 * JSON value, but a string in it can no longer read as several lines, or as reordered or hidden text, to whoever
 * reads the raw text (a model reading a tool result). Only strings can hold these characters, so escaping them
 * anywhere is valid JSON.
 */
export function escapeUnseenInJson(json: string): string {
  return MAY_BE_UNSEEN_IN_JSON.test(json)
    ? json.replace(UNSEEN_IN_JSON, (chars) =>
        Array.from(
          { length: chars.length },
          (_, i) => `\\u${chars.charCodeAt(i).toString(16).padStart(4, '0')}`,
        ).join(''),
      )
    : json;
}

// UNSEEN without C0, tab and DEL (JSON.stringify escapes C0; DEL and tab show), with the line breaks it leaves raw.
const UNSEEN_IN_JSON =
  /[\u0080-\u009f\u2028\u2029\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;
const MAY_BE_UNSEEN_IN_JSON =
  /[\u0080-\u009f\u2028\u2029\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\udb40]/;

function unseen(char: string): string {
  const code = char.codePointAt(0)!;
  if (code < 0xa0) return ' ';
  return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/**
 * `inline`, with square brackets escaped as Markdown does (`\[x\]`): in the formats whose lines carry a
 * checkbox (`[x]`) or an id in brackets (`[k3x9a2b]`), a title cannot then show a box or an id of its own.
 */
export function inlineMarked(text: string): string {
  return inline(text).replace(/[[\]]/g, '\\$&');
}

// A task's title as one line, kept per snapshot: snapshots are replaced when a task changes, so an edit costs
// one escaping of what it changed, not one of every title on every render.
const inlineTitles = new WeakMap<TaskSnapshot, string>();
const markedTitles = new WeakMap<TaskSnapshot, string>();

/** `inline(task.title)`, escaped once per snapshot. */
export function inlineTitle(task: TaskSnapshot): string {
  return escapedTitle(inlineTitles, task, inline);
}

/** `inlineMarked(task.title)`, escaped once per snapshot. */
export function markedTitle(task: TaskSnapshot): string {
  return escapedTitle(markedTitles, task, inlineMarked);
}

function escapedTitle(
  cache: WeakMap<TaskSnapshot, string>,
  task: TaskSnapshot,
  toLine: (text: string) => string,
): string {
  let text = cache.get(task);
  if (text === undefined) {
    text = toLine(task.title);
    cache.set(task, text);
  }
  return text;
}

export function indent(depth: number): string {
  return '  '.repeat(depth);
}

/** What a note on the left-out part counts. */
export interface Omitted {
  closedTasks: number;
  openTasks: number;
  closedSteps: number;
}

const NOTHING: Omitted = Object.freeze({ closedTasks: 0, openTasks: 0, closedSteps: 0 });
const OPEN_TASK: Omitted = Object.freeze({ closedTasks: 0, openTasks: 1, closedSteps: 0 });
const CLOSED_TASK: Omitted = Object.freeze({ closedTasks: 1, openTasks: 0, closedSteps: 0 });

/**
 * What one top-level task adds to the note: itself if left out (`cut` null), else its finished steps if its
 * block leaves them out (a summary counts them itself).
 */
export function omittedBy(view: PlanView, top: TaskSnapshot, cut: Cut | null): Omitted {
  if (cut === null) return isOpenStatus(top.status) ? OPEN_TASK : CLOSED_TASK;
  if (cut !== 'openSteps') return NOTHING;
  return { closedTasks: 0, openTasks: 0, closedSteps: view.steps(top.id).closed };
}

/** "(Not shown: 3 finished tasks, 1 open task — ...)" for what was left out, or "" when nothing was. */
export function omissionNote({ closedTasks, openTasks, closedSteps }: Omitted): string {
  const parts = [
    count(closedTasks, 'finished task'),
    count(closedSteps, 'finished step'),
    count(openTasks, 'open task'),
  ].filter((p) => p !== '');
  if (parts.length === 0) return '';
  const tail = openTasks > 0 ? ' — ask the task tools for the full list' : '';
  return `(Not shown: ${joinWords(parts)}${tail}.)`;
}

function count(n: number, noun: string): string {
  return n === 0 ? '' : `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function joinWords(parts: string[]): string {
  return parts.length <= 1
    ? (parts[0] ?? '')
    : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

/** How far the render clock moves at a time. */
export const RENDER_CLOCK_STEP_MS = 15 * 60_000;

/**
 * The time a render tells ages and applies the done window by: `now` rounded down to its quarter hour. An
 * unchanged plan then renders to the same bytes all through a quarter hour (so a model provider's cached prompt
 * prefix holds between turns), and its text can change with time only when the clock crosses :00, :15, :30 or :45.
 */
export function renderClock(now: number): number {
  return Math.floor(now / RENDER_CLOCK_STEP_MS) * RENDER_CLOCK_STEP_MS;
}

/**
 * "just now" (under 15 minutes), "15 minutes ago", "30 minutes ago", "45 minutes ago", "3 hours ago",
 * "2 days ago": each rounded down, in steps no finer than the render clock's.
 */
export function ago(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / 60_000);
  if (minutes < 15) return 'just now';
  if (minutes < 60) return `${minutes - (minutes % 15)} minutes ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} hour${hours === 1 ? '' : 's'} ago`;
  const days = Math.floor(hours / 24);
  return `${days} days ago`;
}
