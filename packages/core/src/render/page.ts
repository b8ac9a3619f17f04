// The text of a rendered plan, laid out the same way in every format: a head, then a block for each top-level
// task shown (the task and its visible steps), grouped under section headings where the format has them, then
// the note on what was left out. A block depends only on how its own task is cut down, so it is rendered once
// per cut and reused while the budget tries what to leave out.
import type { TaskSnapshot } from '../schema.js';
import {
  type Cut,
  noOmissions,
  type Omitted,
  omissionNote,
  omittedBy,
  type PlanView,
  visibleSteps,
} from './view.js';

export interface FormatRenderer {
  /** The top-level tasks this format shows, in display order (a section's tasks next to each other). */
  tops(view: PlanView): TaskSnapshot[];
  /** What comes before the tasks, ending with the break before them; '' for nothing. */
  head(view: PlanView): string;
  /** The heading of the section `top` is listed under. Absent when the format has no sections. */
  section?(view: PlanView, top: TaskSnapshot): string;
  /** What separates two blocks within a section. */
  between: string;
  /** What separates two sections, and the last one from the note. */
  gap: string;
  /** A top-level task and its steps, cut down by `cut`. */
  block(view: PlanView, cut: Cut, top: TaskSnapshot): string;
}

/** One task's line in a block cut down by `cut`; `depth` 0 is the top-level task. */
export type LineWriter = (
  view: PlanView,
  cut: Cut,
  top: TaskSnapshot,
  task: TaskSnapshot,
  depth: number,
) => string;

/**
 * Calls `visit` for each step shown under `id` in a block cut down by `cut`, depth first, in order: the one walk
 * every format's step list is written by.
 */
export function eachStep(
  view: PlanView,
  cut: Cut,
  id: string,
  depth: number,
  visit: (step: TaskSnapshot, depth: number) => void,
): void {
  for (const step of visibleSteps(view, cut, id)) {
    visit(step, depth);
    eachStep(view, cut, step.id, depth + 1, visit);
  }
}

/** A format's `block` for a format that prints a task and its steps a line each, starting at the top task. */
export function linesBlock(line: LineWriter): FormatRenderer['block'] {
  return (view, cut, top) => {
    let text = line(view, cut, top, top, 0);
    eachStep(view, cut, top.id, 1, (step, depth) => {
      text += `\n${line(view, cut, top, step, depth)}`;
    });
    return text;
  };
}

export class Page {
  /**
   * What the budget asks to leave out; the page reflects it on the next read. A collapse asked for is made only
   * where the summary is shorter than the steps it replaces (`collapsingShortens`), decided when the block is
   * first read, so only the tasks that are shown are ever rendered twice.
   */
  readonly omit = noOmissions();
  readonly tops: readonly TaskSnapshot[];
  readonly head: string;
  private readonly blocks: Record<Cut, Map<string, string>> = {
    whole: new Map(),
    openSteps: new Map(),
    collapsed: new Map(),
  };
  private readonly sections = new Map<string, string>();

  constructor(
    readonly format: FormatRenderer,
    readonly view: PlanView,
  ) {
    this.tops = format.tops(view);
    this.head = format.head(view);
  }

  shown(top: TaskSnapshot): boolean {
    return !this.omit.hidden.has(top.id);
  }

  /** The block of a shown top-level task, as it is cut down now. */
  block(top: TaskSnapshot): string {
    return this.blockCut(top, this.cut(top));
  }

  /** What a top-level task adds to the note on what is left out, as it is cut down now. */
  omittedBy(top: TaskSnapshot): Omitted {
    return omittedBy(this.view, top, this.shown(top) ? this.cut(top) : null);
  }

  /**
   * Whether summarising a task's steps as "(n of m steps done)" makes its block shorter than it is without the
   * summary. When its visible steps are fewer words than the summary, collapsing would cost tokens instead of
   * saving them.
   */
  collapsingShortens(top: TaskSnapshot): boolean {
    return this.blockCut(top, 'collapsed').length < this.blockCut(top, this.uncollapsed(top.id)).length;
  }

  /** The section heading a top-level task is listed under; '' in a format without sections. */
  section(top: TaskSnapshot): string {
    let heading = this.sections.get(top.id);
    if (heading === undefined) {
      heading = this.format.section?.(this.view, top) ?? '';
      this.sections.set(top.id, heading);
    }
    return heading;
  }

  /** What is left out, all counted. */
  omitted(): Omitted {
    const total: Omitted = { closedTasks: 0, openTasks: 0, closedSteps: 0 };
    for (const top of this.tops) {
      const one = this.omittedBy(top);
      total.closedTasks += one.closedTasks;
      total.openTasks += one.openTasks;
      total.closedSteps += one.closedSteps;
    }
    return total;
  }

  /**
   * The whole text; '' when there is nothing to say: no task shown and no open task left out (finished tasks
   * that the done policy hides do not count, so a plan with only old finished work costs zero tokens).
   */
  text(): string {
    const parts: string[] = [];
    let heading: string | undefined;
    let blocks: string[] = [];
    const endSection = () => {
      if (blocks.length === 0) return;
      const body = blocks.join(this.format.between);
      parts.push(heading ? `${heading}\n${body}` : body);
    };
    for (const top of this.tops) {
      if (!this.shown(top)) continue;
      const section = this.section(top);
      if (section !== heading) {
        endSection();
        heading = section;
        blocks = [];
      }
      blocks.push(this.block(top));
    }
    endSection();
    const omitted = this.omitted();
    if (parts.length === 0 && omitted.openTasks === 0) return '';
    const note = omissionNote(omitted);
    if (note) parts.push(note);
    return this.head + parts.join(this.format.gap);
  }

  private blockCut(top: TaskSnapshot, cut: Cut): string {
    const cache = this.blocks[cut];
    let text = cache.get(top.id);
    if (text === undefined) {
      text = this.format.block(this.view, cut, top);
      cache.set(top.id, text);
    }
    return text;
  }

  private cut(top: TaskSnapshot): Cut {
    if (this.omit.collapsed.has(top.id) && this.collapsingShortens(top)) return 'collapsed';
    return this.uncollapsed(top.id);
  }

  private uncollapsed(id: string): Cut {
    return this.omit.closedStepsHidden.has(id) ? 'openSteps' : 'whole';
  }
}
