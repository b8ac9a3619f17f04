// The render benchmark's page (built with `vite build --mode bench`, driven by bench/demo-render.ts): a plan
// of N tasks shown by the demo's TaskList, which updates only the rows a change touched, against a naive list
// that rebuilds every row on every change (the same TaskRow, so only the update strategy differs). It measures
// the first render and each kind of edit, in this real browser, and leaves the samples in `window.__bench`.
import '../style.css';
import { createPlan, isOpenStatus, type Plan, type TaskInput } from '@cairn/core';
import type { BlockedInfo } from '@cairn/core/protocol';
import { h } from '../dom.js';
import { ChunkedList } from '../ui/chunked-list.js';
import { createAttempt, type UiContext } from '../ui/context.js';
import { TaskList } from '../ui/task-list.js';
import { TaskRow } from '../ui/task-row.js';

type EditKind = 'title' | 'status' | 'move';

interface VariantResult {
  /** Building the DOM and the first layout, ms (one sample per fresh mount). */
  firstRender: number[];
  /** Until the frame after the first render has been produced, ms. */
  firstFrame: number[];
  /** From the write to the updated layout, ms, by kind of edit. */
  edits: Record<EditKind, number[]>;
}

export interface BenchOutput {
  tasks: number;
  rows: number;
  incremental: VariantResult;
  naive: VariantResult;
  /** Frame intervals while scrolling, ms: chunks off screen skip layout, and every row laid out. */
  scroll: {
    contentVisibility: { mount: number; intervals: number[] };
    everyRowLaidOut: { mount: number; intervals: number[] };
  };
}

const params = new URLSearchParams(location.search);
const TASKS = Number(params.get('tasks') ?? 2000);
const EDITS = Number(params.get('edits') ?? 30);
const MOUNTS = Number(params.get('mounts') ?? 3);

/** TASKS tasks: a fifth top-level, each with four steps; every third top-level task waits on the one before. */
function makePlan(): Plan {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  // A local plan built in one call, larger than a shared server takes in one call.
  const plan = createPlan({ actor: 'user:bench', random, limits: { tasksPerCall: Infinity } });
  const tops = Math.floor(TASKS / 5);
  const inputs: TaskInput[] = [];
  for (let i = 0; i < tops; i++) {
    inputs.push({
      title: `Task ${i + 1}: prepare the ${['launch', 'review', 'release', 'migration'][i % 4]} notes`,
      key: `t${i}`,
      ...(i > 0 && i % 3 === 0 ? { blockedBy: [`t${i - 1}`] } : {}),
      ...(i % 7 === 0 ? { nextStep: 'Ask for the numbers', assignee: 'agent:helper' } : {}),
      steps: [1, 2, 3, 4].map((s) => ({ title: `Step ${s} of task ${i + 1}` })),
    });
  }
  plan.addMany(inputs);
  return plan;
}

function contextFor(plan: Plan): UiContext {
  return {
    plan,
    nameOf: (actor) => actor.replace(/^(user|agent):/, ''),
    notify: () => undefined,
    attempt: createAttempt(() => undefined),
    focusTask: () => undefined,
  };
}

/** The baseline: on every change, throw the rows away and build them all again. */
class NaiveList {
  private readonly chunks = new ChunkedList('Tasks');
  readonly el = h('div', { className: 'plan-list' }, this.chunks.el);
  private readonly off: () => void;
  constructor(private readonly ctx: UiContext) {
    this.render();
    this.off = ctx.plan.onChange(() => this.render());
  }
  destroy(): void {
    this.off();
  }
  private render(): void {
    const plan = this.ctx.plan;
    const blocked = new Map<string, BlockedInfo>(plan.blocked().map((b) => [b.id, b]));
    const depth = new Map<string | null, number>([[null, -1]]);
    const hidden = new Set<string>();
    const rows: HTMLElement[] = [];
    for (const task of plan.list()) {
      const parent = plan.effectiveParent(task);
      if ((parent !== null && hidden.has(parent)) || !isOpenStatus(task.status)) {
        hidden.add(task.id);
        continue;
      }
      const d = (depth.get(parent) ?? -1) + 1;
      depth.set(task.id, d);
      const row = new TaskRow(task, this.ctx);
      row.setDepth(d);
      row.setBlocked(blocked.get(task.id) ?? null);
      rows.push(row.el);
    }
    this.chunks.el.replaceChildren();
    this.chunks.place(rows);
  }
}

const stage = document.getElementById('bench')!;
stage.className = 'pane';
stage.style.height = '100vh';

const frame = () => new Promise<void>((done) => requestAnimationFrame(() => setTimeout(done, 0)));

type Kind = 'incremental' | 'naive';

/** Mounts one view of a fresh plan and times it; returns the view (and its plan) still mounted. */
async function mountOnce(
  kind: Kind,
  result: VariantResult,
): Promise<{ plan: Plan; view: TaskList | NaiveList }> {
  const plan = makePlan();
  const ctx = contextFor(plan);
  await frame();
  const t0 = performance.now();
  const view = kind === 'incremental' ? new TaskList(ctx) : new NaiveList(ctx);
  stage.replaceChildren(view.el);
  void document.body.offsetHeight;
  const t1 = performance.now();
  await frame();
  result.firstRender.push(t1 - t0);
  result.firstFrame.push(performance.now() - t0);
  return { plan, view };
}

/**
 * First renders alternate between the two views (so load and garbage left by one do not land on the other),
 * then each view gets the same edits.
 */
async function measure(): Promise<Record<Kind, VariantResult>> {
  const empty = (): VariantResult => ({
    firstRender: [],
    firstFrame: [],
    edits: { title: [], status: [], move: [] },
  });
  const results: Record<Kind, VariantResult> = { incremental: empty(), naive: empty() };
  for (let mount = 0; mount < MOUNTS; mount++) {
    for (const kind of mount % 2
      ? (['naive', 'incremental'] as const)
      : (['incremental', 'naive'] as const)) {
      const { plan, view } = await mountOnce(kind, results[kind]);
      view.destroy();
      plan.destroy();
    }
  }
  for (const kind of ['incremental', 'naive'] as const) {
    const scratch = empty();
    const { plan, view } = await mountOnce(kind, scratch);
    await edits(plan, results[kind]);
    view.destroy();
    plan.destroy();
  }
  stage.replaceChildren();
  return results;
}

/** Each kind of edit EDITS times, each timed from the write to the layout that shows it. */
async function edits(plan: Plan, result: VariantResult): Promise<void> {
  const all = plan.list();
  const tops = plan.children(null);
  const pick = (i: number) => all[(i * 7919) % all.length]!;
  const time = (fn: () => void) => {
    const t0 = performance.now();
    fn();
    void document.body.offsetHeight;
    return performance.now() - t0;
  };
  for (let i = 0; i < EDITS; i++) {
    const task = pick(i);
    result.edits.title.push(time(() => plan.update(task.id, { title: `${task.title} (edited ${i})` })));
    await frame();
    // Done hides the row (closed tasks are hidden) and may unblock another; the next edit brings it back.
    const status = plan.get(task.id)!.status === 'done' ? 'pending' : 'done';
    result.edits.status.push(time(() => plan.update(task.id, { status })));
    await frame();
    const mover = tops[(i * 31) % tops.length]!;
    const target = tops[(i * 97 + 13) % tops.length]!;
    if (mover.id !== target.id) {
      result.edits.move.push(time(() => plan.move(mover.id, { after: target.id })));
      await frame();
    }
  }
}

/** The first render and the frame intervals while the list scrolls (one step a frame), in one CSS mode. */
async function scroll(everyRow: boolean): Promise<{ mount: number; intervals: number[] }> {
  const plan = makePlan();
  const style = everyRow ? h('style', { text: '.task-chunk { content-visibility: visible; }' }) : null;
  if (style) document.head.append(style);
  await frame();
  const t0 = performance.now();
  const list = new TaskList(contextFor(plan));
  stage.replaceChildren(list.el);
  void document.body.offsetHeight;
  const mount = performance.now() - t0;
  const scroller = list.el.querySelector('.task-list') as HTMLElement;
  await frame();
  const intervals: number[] = [];
  let last = performance.now();
  // As a person scrolls: about a screenful every few frames (150 px a frame), through the first 400 rows.
  const steps = 120;
  for (let i = 1; i <= steps; i++) {
    scroller.scrollTop = i * 150;
    await new Promise<void>((done) => requestAnimationFrame(() => done()));
    const now = performance.now();
    intervals.push(now - last);
    last = now;
  }
  style?.remove();
  list.destroy();
  plan.destroy();
  stage.replaceChildren();
  return { mount, intervals };
}

async function main(): Promise<void> {
  const rows = makePlan().list().length;
  // One untimed mount of each first, so neither pays for the JIT warming up on the other's behalf.
  for (const View of [NaiveList, TaskList]) {
    const plan = makePlan();
    const view = new View(contextFor(plan));
    stage.replaceChildren(view.el);
    void document.body.offsetHeight;
    await frame();
    view.destroy();
    plan.destroy();
  }
  const { incremental, naive } = await measure();
  const output: BenchOutput = {
    tasks: TASKS,
    rows,
    incremental,
    naive,
    scroll: { contentVisibility: await scroll(false), everyRowLaidOut: await scroll(true) },
  };
  Object.assign(window, { __bench: output });
}

main().catch((error: unknown) => {
  Object.assign(window, { __bench: { error: error instanceof Error ? error.stack : String(error) } });
});
