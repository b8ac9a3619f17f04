// An estimate of a page's size that follows the budget's changes a task at a time, so finding what to leave out
// costs one measure per piece rather than one count of the whole text per try. The pieces are the head, each
// section heading, each block with the separator after it, and the note with the one before it.
//
// A tokenizer that counts by length is measured in characters, which add up exactly. Any other is measured in
// tokens, piece by piece; the pieces end at a line break, where cl100k never merges tokens, so for it the sum
// is off by a token or so at the joins. The budget counts the text it settles on whole either way.
import type { TaskSnapshot } from '../schema.js';
import type { Page } from './page.js';
import type { Tokenizer } from './tokenizer.js';
import { type Omitted, omissionNote } from './view.js';

/** What one top-level task adds to the page as it is cut down now. */
interface Share {
  /** Its block and the separator after it; 0 when it is left out. */
  size: number;
  /** The section it is listed under; null when it is left out. */
  section: string | null;
  omitted: Omitted;
}

export class Tally {
  private shown = 0;
  private blocks = 0;
  /** How many shown blocks each section has: a heading costs only while its section has one. */
  private readonly sections = new Map<string, number>();
  private sectionsShown = 0;
  private headings = 0;
  private readonly omitted: Omitted = { closedTasks: 0, openTasks: 0, closedSteps: 0 };
  private readonly shares = new Map<string, Share>();

  private constructor(
    private readonly page: Page,
    private readonly pieces: Pieces,
  ) {}

  /**
   * Tallies the page as it stands if it fits in `max` by the estimate, else null. The tasks are read in order
   * and rejected as soon as those shown so far are over, so a page far over the budget costs about the budget.
   */
  static fitting(page: Page, pieces: Pieces, max: number): Tally | null {
    const tally = new Tally(page, pieces);
    for (const top of page.tops) {
      tally.add(top);
      if (tally.shown > 0 && pieces.tokens(tally.size(false)) > max) return null;
    }
    return tally.total() <= max ? tally : null;
  }

  /** The page's estimated tokens; 0 when it has nothing to say (see Page.text). */
  total(): number {
    if (this.shown === 0 && this.omitted.openTasks === 0) return 0;
    return this.pieces.tokens(this.size(true));
  }

  /** `top` was cut down differently: replaces what it adds. */
  update(top: TaskSnapshot): void {
    const old = this.shares.get(top.id);
    if (old) this.apply(old, -1);
    this.add(top);
  }

  /** The size of the page, or of all but its note (which can only add to it). */
  private size(withNote: boolean): number {
    const { pieces, sectionsShown: sections } = this;
    // Every block was measured with the separator that follows it within a section; a section's last block is
    // followed by the gap to the next section (or to the note, which was measured with it), or by nothing.
    const joins = (sections - 1) * pieces.gap - sections * pieces.between;
    const size = pieces.head + this.headings + this.blocks + joins;
    return withNote ? size + pieces.note(this.omitted) : size;
  }

  private add(top: TaskSnapshot): void {
    const { page } = this;
    const shown = page.shown(top);
    const share: Share = {
      size: shown ? this.pieces.block(top) : 0,
      section: shown ? page.section(top) : null,
      omitted: page.omittedBy(top),
    };
    this.shares.set(top.id, share);
    this.apply(share, 1);
  }

  private apply(share: Share, sign: 1 | -1): void {
    this.blocks += sign * share.size;
    if (share.section !== null) {
      this.shown += sign;
      const before = this.sections.get(share.section) ?? 0;
      this.sections.set(share.section, before + sign);
      if (before === 0 || before + sign === 0) {
        this.sectionsShown += sign;
        this.headings += sign * this.pieces.heading(share.section);
      }
    }
    this.omitted.closedTasks += sign * share.omitted.closedTasks;
    this.omitted.openTasks += sign * share.omitted.openTasks;
    this.omitted.closedSteps += sign * share.omitted.closedSteps;
  }
}

/** The sizes of a page's pieces, each measured once per render, in units that add up (see above). */
export class Pieces {
  readonly head: number;
  readonly between: number;
  readonly gap: number;
  /** The size of a piece of text. */
  readonly size: (piece: string) => number;
  /** Tokens for a size. */
  readonly tokens: (size: number) => number;
  /** The size of a block with the separator after it. */
  private readonly blockSize: (block: string) => number;

  constructor(
    private readonly page: Page,
    tokenizer: Tokenizer,
  ) {
    const { between, gap } = page.format;
    const perToken = tokenizer.charsPerToken;
    if (perToken === undefined) {
      // Counted once per text: a block often reads the same cut down two ways (no finished steps to hide).
      const pieces = new Map<string, number>();
      const blocks = new Map<string, number>();
      this.size = (piece) => once(pieces, piece, () => tokenizer.count(piece));
      this.blockSize = (block) => once(blocks, block, () => tokenizer.count(block + between));
      this.tokens = (size) => size;
    } else {
      this.size = (piece) => piece.length;
      this.blockSize = (block) => block.length + between.length;
      this.tokens = (size) => Math.ceil(size / perToken);
    }
    this.head = this.size(page.head);
    this.between = this.size(between);
    this.gap = this.size(gap);
  }

  block(top: TaskSnapshot): number {
    return this.blockSize(this.page.block(top));
  }

  heading(section: string): number {
    return section === '' ? 0 : this.size(`${section}\n`);
  }

  note(omitted: Omitted): number {
    const note = omissionNote(omitted);
    return note === '' ? 0 : this.size(this.page.format.gap + note);
  }
}

function once(cache: Map<string, number>, key: string, measure: () => number): number {
  let n = cache.get(key);
  if (n === undefined) {
    n = measure();
    cache.set(key, n);
  }
  return n;
}
