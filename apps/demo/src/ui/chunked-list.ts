// A list container whose rows sit in chunks of about 50, each chunk `content-visibility: auto`: the browser
// skips layout and paint of chunks off screen. Per row that property made scrolling slow (2,000 elements to
// check each frame; bench/demo-render.ts measures it), per chunk there are only ~40. `place` puts the rows in
// the given order with as few DOM moves as possible.

const TARGET = 50;
const MAX = 100;

export class ChunkedList {
  readonly el: HTMLDivElement;

  constructor(label: string) {
    this.el = document.createElement('div');
    this.el.className = 'task-list';
    this.el.setAttribute('role', 'list');
    this.el.setAttribute('aria-label', label);
  }

  /** Makes the rows, in document order, exactly `rows`. Rows not in `rows` must already be removed. */
  place(rows: readonly HTMLElement[]): void {
    const chunks = [...this.el.children] as HTMLElement[];
    let index = 0;
    let node: ChildNode | null = chunks[0]?.firstChild ?? null;
    const normalize = () => {
      while (node === null && index < chunks.length - 1) node = chunks[++index]!.firstChild;
    };
    normalize();
    for (const el of rows) {
      if (el === node) {
        node = node.nextSibling;
        normalize();
        continue;
      }
      if (node) {
        node.parentNode!.insertBefore(el, node);
        continue;
      }
      // At the end: fill the last chunk up to the target size, then start another.
      let last = chunks[chunks.length - 1];
      if (!last || last.childElementCount >= TARGET) {
        last = this.newChunk();
        this.el.append(last);
        chunks.push(last);
        index = chunks.length - 1;
      }
      last.append(el);
    }
    this.rebalance();
  }

  /** Splits chunks that grew past MAX, drops empty ones. */
  private rebalance(): void {
    for (const chunk of [...this.el.children] as HTMLElement[]) {
      const count = chunk.childElementCount;
      if (count === 0) {
        chunk.remove();
        continue;
      }
      if (count <= MAX) continue;
      let rest = chunk;
      while (rest.childElementCount > MAX) {
        const next = this.newChunk();
        const moving = [...rest.children].slice(TARGET);
        next.append(...moving);
        rest.after(next);
        rest = next;
      }
    }
  }

  private newChunk(): HTMLDivElement {
    const chunk = document.createElement('div');
    chunk.className = 'task-chunk';
    return chunk;
  }
}

/** The row after (or before) this one, across chunk boundaries. */
export function adjacentRow(row: Element, direction: 1 | -1): Element | null {
  const sibling = direction === 1 ? row.nextElementSibling : row.previousElementSibling;
  if (sibling) return sibling;
  const chunk = row.parentElement;
  const other = direction === 1 ? chunk?.nextElementSibling : chunk?.previousElementSibling;
  return (direction === 1 ? other?.firstElementChild : other?.lastElementChild) ?? null;
}
