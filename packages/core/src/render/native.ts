// Cairn's own format: what you can start now first, then what others hold, what is blocked and on what,
// what waits on someone, and what is finished; who is here and on what (from awareness, when given); steps
// nested under their task. Tasks are named by their string ids, which the native tools take.
import { isOpenStatus, type TaskSnapshot } from '../schema.js';
import { type FormatRenderer, linesBlock } from './page.js';
import {
  type Cut,
  checkbox,
  collapsedNote,
  indent,
  inline,
  inlineMarked,
  markedTitle,
  type PlanView,
  statusWords,
} from './view.js';

type Group = 'ready' | 'taken' | 'blocked' | 'waiting' | 'done';
const HEADINGS: Record<Group, string> = {
  ready: 'Ready to start:',
  taken: 'Taken by others:',
  blocked: 'Blocked:',
  waiting: 'Waiting:',
  done: 'Finished:',
};
const ORDER: Group[] = ['ready', 'taken', 'blocked', 'waiting', 'done'];

function groupOf(view: PlanView, task: TaskSnapshot): Group {
  if (!isOpenStatus(task.status)) return 'done';
  if (task.status === 'waiting_user' || task.status === 'waiting_external') return 'waiting';
  const blocked = view.blocked(task.id);
  // A task waiting on its steps is where the first of its open steps is: one that can start makes it ready.
  if (blocked?.reason === 'waiting_on_steps') return stepsGroup(view, task.id);
  if (blocked) return 'blocked';
  if (task.assignee !== null && task.assignee !== view.actor) return 'taken';
  return 'ready';
}

function stepsGroup(view: PlanView, id: string): Group {
  let best = ORDER.length - 1;
  for (const step of view.children(id)) {
    if (isOpenStatus(step.status)) best = Math.min(best, ORDER.indexOf(groupOf(view, step)));
    if (best === 0) break; // one step that can start makes the task ready: the rest need not be read
  }
  return ORDER[best]!;
}

export const nativeFormat: FormatRenderer = {
  tops(view) {
    const byGroup = new Map<Group, TaskSnapshot[]>(ORDER.map((group) => [group, []]));
    for (const top of view.children(null)) byGroup.get(groupOf(view, top))!.push(top);
    return ORDER.flatMap((group) => byGroup.get(group)!);
  },
  head(view) {
    const here = hereNow(view);
    return `## Plan${here ? `\n\n${here}` : ''}\n\n`;
  },
  section: (view, top) => HEADINGS[groupOf(view, top)],
  between: '\n',
  gap: '\n\n',
  block: linesBlock(line),
};

function line(view: PlanView, cut: Cut, top: TaskSnapshot, task: TaskSnapshot, depth: number): string {
  const notes = annotations(view, task);
  const collapsed = depth === 0 ? collapsedNote(view, cut, top.id) : '';
  return (
    `${indent(depth)}- ${checkbox(task.status)} ${view.showNumbers ? `${task.num}. ` : ''}${named(task)}${statusWords(task.status)}${collapsed}` +
    (notes.length > 0 ? ` — ${notes.join('; ')}` : '')
  );
}

function ref(view: PlanView, id: string): string {
  const task = view.plan.get(id);
  return task ? named(task) : `${inlineMarked(id)} [${inlineMarked(id)}]`;
}

/**
 * "Write migration [k3x9a2b]": brackets in the title are escaped, so the last pair is always the id (ids are
 * generated without brackets or breaks, but a document from elsewhere may hold any key).
 */
function named(task: TaskSnapshot): string {
  return `${markedTitle(task)} [${inlineMarked(task.id)}]`;
}

function annotations(view: PlanView, task: TaskSnapshot): string[] {
  const notes: string[] = [];
  const open = isOpenStatus(task.status);
  const blocked = view.blocked(task.id);
  if (open && blocked) {
    if (blocked.reason === 'waiting_on_blockers')
      notes.push(`waits on ${blocked.blockedBy.map((id) => ref(view, id)).join(', ')}`);
    else if (blocked.reason === 'blocker_failed') {
      notes.push(`blocked: ${blocked.blockedBy.map((id) => ref(view, id)).join(', ')} failed`);
    } else if (blocked.reason === 'cycle') {
      notes.push(`in a dependency cycle with ${blocked.blockedBy.map((id) => ref(view, id)).join(', ')}`);
    }
    // parent_blocked needs no words: the step sits under its blocked task.
  }
  if (task.assignee !== null) {
    if (task.assignee === view.actor) notes.push('yours');
    else {
      const assignee = inline(view.nameOf(task.assignee));
      if (view.presence === null) notes.push(`assigned to ${assignee}`);
      else if (view.presence.some((p) => p.actor === task.assignee)) notes.push(`${assignee} is on it`);
      else notes.push(`assigned to ${assignee}, who is not connected`);
    }
  }
  const watchers = (view.presence ?? []).filter(
    (p) => p.taskId === task.id && p.actor !== task.assignee && p.actor !== view.actor,
  );
  if (watchers.length > 0)
    notes.push(`${watchers.map((p) => inline(view.nameOf(p.actor))).join(', ')} looking at it`);
  if (open && task.wakeAt) notes.push(`wakes ${inline(task.wakeAt)}`);
  if (task.updatedBy === 'wake' && task.status === 'in_progress') notes.push('just woke up');
  if (open && task.nextStep) notes.push(`next: ${inline(task.nextStep)}`);
  return notes;
}

/** "Here now: agent:b (on Write migration [k3x9a2b]), user:ann" from awareness, without the reader. */
function hereNow(view: PlanView): string {
  if (!view.presence) return '';
  const seen = new Set<string>();
  const others: string[] = [];
  for (const p of view.presence) {
    if (p.actor === view.actor || seen.has(p.actor)) continue;
    seen.add(p.actor);
    const on = p.taskId && view.plan.has(p.taskId) ? ` (on ${ref(view, p.taskId)})` : '';
    others.push(`${inline(view.nameOf(p.actor))}${on}`);
  }
  return others.length > 0 ? `Here now: ${others.join(', ')}` : '';
}
