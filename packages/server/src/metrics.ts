// The server's Prometheus metrics, rendered in the text exposition format (version 0.0.4) by the registry itself,
// so the hub runs on every runtime; a Node host adds Node's process metrics (process-metrics.ts, prom-client).
// Label values must stay few (a message type, an operation): never a plan id or a user.

type Labels = Record<string, string>;

/**
 * A label set's names, sorted and joined (its identity for `Series`), and a key of its values for the totals a
 * counter keeps. Counters are recorded per message and per update, and every one here has at most one label, so
 * that case is one loop, without a sort or an allocation besides the key.
 */
function labelIdentity(labels: Labels): { names: string; key: string } {
  let names = '';
  let key = '';
  let count = 0;
  for (const name in labels) {
    count++;
    names = name;
    key = labels[name]!;
  }
  if (count < 2) return { names, key };
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { names: entries.map(([name]) => name).join(','), key: JSON.stringify(entries) };
}

/** Label names are fixed by a metric's first use, so callers never declare them; later uses must name the same. */
class LabelNames {
  private names: string | null = null;
  constructor(private readonly metric: string) {}
  check(names: string): void {
    if (this.names === names) return;
    if (this.names !== null) {
      throw new Error(
        `metric ${this.metric} is recorded with labels [${this.names}]; got [${names}] (every use names the same labels)`,
      );
    }
    this.names = names;
  }
  /** True once something was recorded (with or without labels). */
  get used(): boolean {
    return this.names !== null;
  }
}

const escapeText = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const labelText = (labels: Labels, first = '') => {
  const parts = Object.entries(labels).map(
    ([name, value]) => `${name}="${escapeText(value).replace(/"/g, '\\"')}"`,
  );
  const all = first ? [first, ...parts] : parts;
  return all.length > 0 ? `{${all.join(',')}}` : '';
};
const valueText = (value: number) =>
  Number.isNaN(value) ? 'Nan' : Number.isFinite(value) ? `${value}` : value < 0 ? '-Inf' : '+Inf';

interface Metric {
  readonly name: string;
  /** Its lines: `# HELP`, `# TYPE` and the samples. */
  lines(): string[];
}

const header = (name: string, help: string, type: string) => [
  `# HELP ${name} ${escapeText(help)}`,
  `# TYPE ${name} ${type}`,
];

/**
 * A counter kept as plain numbers, one per label set: `inc` runs per message and per update. Until something is
 * recorded it reads `name 0`.
 */
export class Counter implements Metric {
  private readonly totals = new Map<string, { labels: Labels; value: number }>();
  private readonly labelNames: LabelNames;
  constructor(
    readonly name: string,
    private readonly help: string,
  ) {
    this.labelNames = new LabelNames(name);
  }
  inc(labels: Labels = {}, by = 1): void {
    const { names, key } = labelIdentity(labels);
    this.labelNames.check(names);
    const total = this.totals.get(key);
    if (total) total.value += by;
    else this.totals.set(key, { labels: { ...labels }, value: by });
  }
  get(labels: Labels = {}): number {
    return this.totals.get(labelIdentity(labels).key)?.value ?? 0;
  }
  lines(): string[] {
    const samples = [...this.totals.values()].map(
      ({ labels, value }) => `${this.name}${labelText(labels)} ${valueText(value)}`,
    );
    return [
      ...header(this.name, this.help, 'counter'),
      ...(this.totals.size > 0 ? samples : [`${this.name} 0`]),
    ];
  }
}

export class Histogram implements Metric {
  private readonly series = new Map<
    string,
    { labels: Labels; counts: number[]; sum: number; count: number }
  >();
  private readonly labelNames: LabelNames;
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly buckets: readonly number[],
  ) {
    this.labelNames = new LabelNames(name);
  }
  observe(value: number, labels: Labels = {}): void {
    const { names, key } = labelIdentity(labels);
    this.labelNames.check(names);
    let series = this.series.get(key);
    if (!series) {
      series = { labels: { ...labels }, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    for (const [i, bound] of this.buckets.entries()) if (value <= bound) series.counts[i]!++;
    series.sum += value;
    series.count++;
  }
  lines(): string[] {
    const all =
      this.series.size > 0
        ? [...this.series.values()]
        : [{ labels: {}, counts: this.buckets.map(() => 0), sum: 0, count: 0 }];
    const out = header(this.name, this.help, 'histogram');
    for (const { labels, counts, sum, count } of all) {
      for (const [i, bound] of this.buckets.entries()) {
        out.push(`${this.name}_bucket${labelText(labels, `le="${valueText(bound)}"`)} ${counts[i]}`);
      }
      out.push(`${this.name}_bucket${labelText(labels, 'le="+Inf"')} ${count}`);
      out.push(`${this.name}_sum${labelText(labels)} ${valueText(sum)}`);
      out.push(`${this.name}_count${labelText(labels)} ${count}`);
    }
    return out;
  }
}

export interface MetricsRegistryOptions {
  /**
   * More metrics in the text format, appended to every render: a Node host passes `nodeProcessMetrics` (Node's
   * default process metrics). Default none.
   */
  extra?: () => string | Promise<string>;
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();
  private readonly extra: (() => string | Promise<string>) | null;

  constructor(options: MetricsRegistryOptions = {}) {
    this.extra = options.extra ?? null;
  }

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  /** A value read when rendered, so it can never drift from the thing it measures. */
  gauge(name: string, help: string, read: () => number): void {
    this.add({ name, lines: () => [...header(name, help, 'gauge'), `${name} ${valueText(read())}`] });
  }
  /** A counter whose value lives elsewhere (e.g. in the store), read when rendered. */
  counterFrom(name: string, help: string, read: () => number): void {
    this.add({ name, lines: () => [...header(name, help, 'counter'), `${name} ${valueText(read())}`] });
  }
  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    return this.add(
      new Histogram(
        name,
        help,
        [...buckets].sort((a, b) => a - b),
      ),
    );
  }
  /** The text exposition format, served with `contentType`. */
  async render(): Promise<string> {
    const ours = [...this.metrics.values()].map((metric) => metric.lines().join('\n'));
    const extra = this.extra ? (await this.extra()).trimEnd() : '';
    return `${[...ours, ...(extra ? [extra] : [])].join('\n\n')}\n`;
  }
  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8';

  private add<M extends Metric>(metric: M): M {
    if (this.metrics.has(metric.name)) throw new Error(`metric ${metric.name} registered twice`);
    this.metrics.set(metric.name, metric);
    return metric;
  }
}

/** Seconds, from 0.5 ms to 10 s: store latencies. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
] as const;
