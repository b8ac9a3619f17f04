// The shape every benchmark returns, number formatting, and the Markdown that docs/BENCHMARKS.md is made of.
import type { Machine } from './machine.js';

/** One comparison: Cairn against one baseline on the same work. */
export interface Row {
  /** What was measured, e.g. "ready() after a status change, 10k tasks / 30k edges (median)". */
  measure: string;
  cairn: string;
  baselineName: string;
  baseline: string;
  /** How Cairn compares, e.g. "38x faster"; empty when there is nothing to divide. */
  ratio: string;
  /** The target this row is held to, or "" when the row is context only. */
  target: string;
  /** Whether the target was met; null when the row has no target. */
  met: boolean | null;
}

/** A row with Cairn's figure alone: a breakdown or context for the comparisons around it, held to no target. */
export function cairnOnly(measure: string, cairn: string): Row {
  return { measure, cairn, baselineName: '', baseline: '', ratio: '', target: '', met: null };
}

export interface BenchResult {
  id: string;
  /** The benchmark's number in the issue (1 to 7). */
  number: number;
  title: string;
  /** How the work was set up, in a sentence or two. */
  method: string;
  rows: Row[];
  /** Findings: profiles, what bounds a missed target, caveats. */
  notes: string[];
  quick: boolean;
  at: string;
  seconds: number;
  machine: Machine;
}

/** What a benchmark module's `run({ quick })` returns; the runner adds the machine, the time and the mode. */
export type BenchOutcome = Omit<BenchResult, 'machine' | 'at' | 'seconds' | 'quick'>;

/** `--quick` runs shorter versions of the same work. */
export interface BenchOptions {
  quick: boolean;
}

export function ms(x: number): string {
  if (x >= 1000) return `${(x / 1000).toFixed(2)} s`;
  if (x >= 100) return `${x.toFixed(0)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  if (x >= 1) return `${x.toFixed(2)} ms`;
  if (x >= 0.01) return `${(x * 1000).toFixed(0)} µs`;
  return `${(x * 1000).toFixed(1)} µs`;
}

export function bytes(x: number): string {
  if (x >= 2 ** 20) return `${(x / 2 ** 20).toFixed(2)} MiB`;
  if (x >= 1024) return `${(x / 1024).toFixed(1)} KiB`;
  return `${x} B`;
}

export function count(x: number, unit = ''): string {
  const s = x >= 100 ? Math.round(x).toLocaleString('en-US') : x >= 10 ? x.toFixed(1) : x.toFixed(2);
  return unit ? `${s} ${unit}` : s;
}

/** "12x faster" / "1.3x slower" for times (lower is better). */
export function speedup(cairn: number, baseline: number): string {
  if (!(cairn > 0) || !(baseline > 0)) return '';
  const r = baseline / cairn;
  return r >= 1 ? `${fmtRatio(r)} faster` : `${fmtRatio(1 / r)} slower`;
}

/** "12x more" / "1.3x less" for throughputs (higher is better). */
export function throughputRatio(cairn: number, baseline: number): string {
  if (!(cairn > 0) || !(baseline > 0)) return '';
  const r = cairn / baseline;
  return r >= 1 ? `${fmtRatio(r)} higher` : `${fmtRatio(1 / r)} lower`;
}

/** "12x smaller" / "1.3x larger" for sizes (lower is better). */
export function sizeRatio(cairn: number, baseline: number): string {
  if (!(cairn > 0) || !(baseline > 0)) return '';
  const r = baseline / cairn;
  return r >= 1 ? `${fmtRatio(r)} smaller` : `${fmtRatio(1 / r)} larger`;
}

export function fmtRatio(r: number): string {
  return r >= 100 ? `${Math.round(r)}x` : r >= 10 ? `${r.toFixed(1)}x` : `${r.toFixed(2)}x`;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderTable(rows: readonly Row[]): string {
  const head = '| What was measured | Cairn | Baseline | Baseline value | Ratio | Target | Met |';
  const rule = '| --- | ---: | --- | ---: | ---: | --- | :---: |';
  const lines = rows.map((r) =>
    [
      '',
      cell(r.measure),
      cell(r.cairn),
      cell(r.baselineName),
      cell(r.baseline),
      cell(r.ratio),
      cell(r.target || '—'),
      r.met === null ? '—' : r.met ? 'yes' : '**no**',
      '',
    ]
      .join(' | ')
      .trim(),
  );
  return [head, rule, ...lines].join('\n');
}

export function renderMachine(m: Machine): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}`;
}

export function renderSection(result: BenchResult): string {
  const missed = result.rows.filter((r) => r.met === false).length;
  const status =
    result.rows.some((r) => r.met !== null) && missed === 0
      ? 'every target met'
      : missed > 0
        ? `${missed} target${missed > 1 ? 's' : ''} missed`
        : 'no target';
  const parts = [
    `## ${result.number}. ${result.title}`,
    '',
    `_${status}; measured ${result.at.slice(0, 16).replace('T', ' ')} UTC in ${result.seconds.toFixed(0)} s` +
      `${result.quick ? ' (quick mode)' : ''}; load average ${result.machine.loadStart.toFixed(2)} at start` +
      `${result.machine.loadEnd !== undefined ? `, ${result.machine.loadEnd.toFixed(2)} at end` : ''}._`,
    '',
    result.method,
    '',
    renderTable(result.rows),
  ];
  if (result.notes.length > 0) parts.push('', ...result.notes.map((n) => `- ${n}`));
  return parts.join('\n');
}
