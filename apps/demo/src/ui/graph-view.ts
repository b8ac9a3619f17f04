// The dependency graph as SVG: a column per dependency depth, an arrow from each blocker to the task that waits
// on it, colour for ready / in progress / blocked / in a cycle / closed. Cycles (which only a merge can create)
// share a column and their edges are drawn red. Labels are SVG text nodes, never markup.
import { isOpenStatus, type Plan, type TaskSnapshot } from '@cairn/core';
import { h, svg } from '../dom.js';

const NODE_W = 190;
const NODE_H = 44;
const COL_GAP = 70;
const ROW_GAP = 14;
const PAD = 16;
const MAX_NODES = 400;

export type NodeState = 'ready' | 'in_progress' | 'waiting' | 'blocked' | 'cycle' | 'closed';

export interface GraphModel {
  nodes: Array<{ task: TaskSnapshot; state: NodeState; layer: number; row: number }>;
  edges: Array<{ from: string; to: string; inCycle: boolean }>;
  counts: Record<NodeState, number>;
  total: number;
}

/** Lays the plan out: open tasks (and closed ones when asked), each in the column after its deepest blocker. */
export function layoutGraph(plan: Plan, includeClosed: boolean): GraphModel {
  const tasks = plan.list().filter((t) => includeClosed || isOpenStatus(t.status));
  const shown = tasks.slice(0, MAX_NODES);
  const ids = new Set(shown.map((t) => t.id));
  const blocked = new Map(plan.blocked().map((b) => [b.id, b]));
  const cycleOf = new Map<string, number>();
  plan.cycles().forEach((cycle, i) => {
    for (const id of cycle) cycleOf.set(id, i);
  });
  const byId = new Map(shown.map((t) => [t.id, t]));
  const layer = new Map<string, number>();
  // Depth over the graph without the edges inside a cycle, which leaves a DAG (the cycles are its SCCs).
  const depthOf = (id: string, trail: Set<string>): number => {
    const known = layer.get(id);
    if (known !== undefined) return known;
    if (trail.has(id)) return 0;
    trail.add(id);
    let d = 0;
    for (const blocker of byId.get(id)?.blockedBy ?? []) {
      if (!ids.has(blocker)) continue;
      const sameCycle = cycleOf.has(id) && cycleOf.get(id) === cycleOf.get(blocker);
      if (!sameCycle) d = Math.max(d, depthOf(blocker, trail) + 1);
    }
    trail.delete(id);
    layer.set(id, d);
    return d;
  };
  for (const task of shown) depthOf(task.id, new Set());
  // Members of one cycle share the deepest column among them.
  const cycleLayer = new Map<number, number>();
  for (const [id, c] of cycleOf)
    if (layer.has(id)) cycleLayer.set(c, Math.max(cycleLayer.get(c) ?? 0, layer.get(id)!));
  for (const [id, c] of cycleOf) if (layer.has(id)) layer.set(id, cycleLayer.get(c)!);

  const rows = new Map<number, number>();
  const counts: Record<NodeState, number> = {
    ready: 0,
    in_progress: 0,
    waiting: 0,
    blocked: 0,
    cycle: 0,
    closed: 0,
  };
  const nodes = shown.map((task) => {
    const l = layer.get(task.id) ?? 0;
    const row = rows.get(l) ?? 0;
    rows.set(l, row + 1);
    const info = blocked.get(task.id);
    const state: NodeState = !isOpenStatus(task.status)
      ? 'closed'
      : info?.reason === 'cycle'
        ? 'cycle'
        : info
          ? 'blocked'
          : task.status === 'in_progress'
            ? 'in_progress'
            : task.status === 'pending'
              ? 'ready'
              : 'waiting';
    counts[state]++;
    return { task, state, layer: l, row };
  });
  const edges: GraphModel['edges'] = [];
  for (const task of shown) {
    for (const blocker of task.blockedBy) {
      if (!ids.has(blocker)) continue;
      const inCycle = cycleOf.has(task.id) && cycleOf.get(task.id) === cycleOf.get(blocker);
      edges.push({ from: blocker, to: task.id, inCycle });
    }
  }
  return { nodes, edges, counts, total: tasks.length };
}

const STATE_LABELS: Record<NodeState, string> = {
  ready: 'ready',
  in_progress: 'in progress',
  waiting: 'waiting',
  blocked: 'blocked',
  cycle: 'in a cycle',
  closed: 'closed',
};

export class GraphView {
  readonly el: HTMLElement;
  private readonly canvas: HTMLDivElement;
  private readonly summary: HTMLParagraphElement;
  private readonly closedToggle: HTMLInputElement;
  private visible = false;
  private dirty = true;
  private frame = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly plan: Plan,
    private readonly onPick: (id: string) => void,
  ) {
    this.summary = h('p', { className: 'graph-summary', attrs: { 'aria-live': 'polite' } });
    this.closedToggle = h('input', { attrs: { type: 'checkbox' }, on: { change: () => this.render() } });
    this.canvas = h('div', { className: 'graph-canvas' });
    const legend = h(
      'ul',
      { className: 'graph-legend', attrs: { 'aria-label': 'Legend' } },
      ...(['ready', 'in_progress', 'waiting', 'blocked', 'cycle', 'closed'] as const).map((state) =>
        h('li', { className: `legend-${state}`, text: STATE_LABELS[state] }),
      ),
    );
    this.el = h(
      'section',
      { className: 'graph-view', attrs: { 'aria-label': 'Dependency graph' } },
      h(
        'div',
        { className: 'list-bar' },
        this.summary,
        h('label', { className: 'toggle' }, this.closedToggle, h('span', { text: 'Include closed' })),
      ),
      legend,
      this.canvas,
    );
    this.unsubscribe = plan.onChange(() => this.invalidate());
  }

  setVisible(visible: boolean): void {
    this.visible = visible;
    if (visible && this.dirty) this.render();
  }

  destroy(): void {
    this.unsubscribe();
    cancelAnimationFrame(this.frame);
  }

  /** Redraws at most once a frame, and only while shown. */
  private invalidate(): void {
    this.dirty = true;
    if (!this.visible || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render(): void {
    this.dirty = false;
    const model = layoutGraph(this.plan, this.closedToggle.checked);
    const { counts } = model;
    const parts = [
      `${counts.ready} ready`,
      `${counts.in_progress} in progress`,
      `${counts.blocked} blocked`,
      ...(counts.cycle > 0 ? [`${counts.cycle} in a dependency cycle`] : []),
      ...(counts.waiting > 0 ? [`${counts.waiting} waiting`] : []),
    ];
    this.summary.textContent =
      model.total > model.nodes.length
        ? `${parts.join(' · ')} (showing the first ${model.nodes.length} of ${model.total})`
        : parts.join(' · ');
    if (model.nodes.length === 0) {
      this.canvas.replaceChildren(
        h('p', { className: 'empty', text: 'Nothing to draw yet: the plan has no open tasks.' }),
      );
      return;
    }
    const pos = new Map<string, { x: number; y: number }>();
    let width = 0;
    let height = 0;
    for (const node of model.nodes) {
      const x = PAD + node.layer * (NODE_W + COL_GAP);
      const y = PAD + node.row * (NODE_H + ROW_GAP);
      pos.set(node.task.id, { x, y });
      width = Math.max(width, x + NODE_W + PAD);
      height = Math.max(height, y + NODE_H + PAD);
    }
    const title = (id: string) => this.plan.get(id)?.title ?? id;
    const root = svg('svg', {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'group',
      'aria-label': `Dependency graph: ${this.summary.textContent}`,
    });
    root.append(
      svg('defs', {}, arrowMarker('arrow', 'arrow-head'), arrowMarker('arrow-cycle', 'arrow-head cycle')),
    );
    const edgeLayer = svg('g', { class: 'edges' });
    for (const edge of model.edges) {
      const a = pos.get(edge.from)!;
      const b = pos.get(edge.to)!;
      let d: string;
      if (a.x < b.x) {
        const x1 = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const x2 = b.x;
        const y2 = b.y + NODE_H / 2;
        const mid = (x1 + x2) / 2;
        d = `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
      } else {
        // Same column (a cycle): an arc on the right side.
        const x = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const y2 = b.y + NODE_H / 2;
        const bulge = 30 + Math.abs(y2 - y1) / 4;
        d = `M${x},${y1} C${x + bulge},${y1} ${x + bulge},${y2} ${x + 2},${y2}`;
      }
      const path = svg('path', {
        d,
        class: edge.inCycle ? 'edge cycle' : 'edge',
        'marker-end': edge.inCycle ? 'url(#arrow-cycle)' : 'url(#arrow)',
      });
      path.append(svg('title', {}, `${title(edge.to)} waits on ${title(edge.from)}`));
      edgeLayer.append(path);
    }
    root.append(edgeLayer);
    const nodeLayer = svg('g', { class: 'nodes' });
    for (const node of model.nodes) {
      const { x, y } = pos.get(node.task.id)!;
      const label = `${node.task.title} — ${STATE_LABELS[node.state]}${node.task.blockedBy.length ? `, waits on ${node.task.blockedBy.map(title).join(', ')}` : ''}`;
      const g = svg('g', {
        class: `node node-${node.state}`,
        transform: `translate(${x},${y})`,
        tabindex: 0,
        role: 'button',
        'aria-label': label,
        'data-id': node.task.id,
      });
      const pick = () => this.onPick(node.task.id);
      g.addEventListener('click', pick);
      g.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          pick();
        }
      });
      g.append(
        svg('rect', { width: NODE_W, height: NODE_H, rx: 8 }),
        svg('text', { x: 10, y: 18, class: 'node-title' }, clip(node.task.title, 26)),
        svg('text', { x: 10, y: 35, class: 'node-state' }, `#${node.task.num} · ${STATE_LABELS[node.state]}`),
        svg('title', {}, label),
      );
      nodeLayer.append(g);
    }
    root.append(nodeLayer);
    this.canvas.replaceChildren(root);
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** An arrow head for the edges' `marker-end`: one shape, classed for how it is drawn. */
function arrowMarker(id: string, headClass: string): SVGElement {
  return svg(
    'marker',
    { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: headClass }),
  );
}
