// The text of a rendered plan, laid out the same way in every format: a head, then a block for each top-level
// task shown (the task and its visible steps), grouped under section headings where the format has them, then
// the note on what was left out. A block depends only on how its own task is cut down, so it is rendered once
// per cut and reused while the budget tries what to leave out.
import type { TaskSnapshot } from '../schema.js';
import { noOmissions, type Omissions, type Omitted, omissionNote, omittedBy, type PlanView } from './view.js';

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
  /** A top-level task and its steps, as `omit` cuts them down. */
  block(view: PlanView, omit: Omissions, top: TaskSnapshot): string;
}

/** Writes one task's line, then its visible steps' (one deeper), onto `out`. */
export type LineWriter = (
  view: PlanView,
  omit: Omissions,
  top: TaskSnapshot,
  task: TaskSnapshot,
  depth: number,
  out: string[],
) => void;

/** A format's `block` for a format that prints a task and its steps a line each, starting at the top task. */
export function linesBlock(line: LineWriter): FormatRenderer['block'] {
  return (view, omit, top) => {
    const lines: string[] = [];
    line(view, omit, top, top, 0, lines);
    return lines.join('\n');
  };
}

/** How a top-level task is cut down; each gives a different block. */
type Cut = 'whole' | 'openSteps' | 'collapsed';

export class Page {
  /** What is left out; the budget changes it, and the page reflects it on the next read. */
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
    const cache = this.blocks[this.cut(top.id)];
    let text = cache.get(top.id);
    if (text === undefined) {
      text = this.format.block(this.view, this.omit, top);
      cache.set(top.id, text);
    }
    return text;
  }

  /**
   * Whether summarising a task's steps as "(n of m steps done)" makes its block shorter than it is now. When its
   * visible steps are fewer words than the summary, collapsing would cost tokens instead of saving them.
   */
  collapsingShortens(top: TaskSnapshot): boolean {
    const now = this.block(top);
    const collapsed = this.omit.collapsed;
    if (collapsed.has(top.id)) return false;
    collapsed.add(top.id);
    try {
      return this.block(top).length < now.length;
    } finally {
      collapsed.delete(top.id);
    }
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
      const one = omittedBy(this.view, this.omit, top);
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

  private cut(id: string): Cut {
    if (this.omit.collapsed.has(id)) return 'collapsed';
    return this.omit.closedStepsHidden.has(id) ? 'openSteps' : 'whole';
  }
}
