// A minimal Prometheus registry (counters, gauges, histograms with labels) rendered in the text exposition
// format. Label values must stay few (a message type, an operation): never a plan id or a user.

type Labels = Record<string, string>;

/** Rendered label sets by their raw values: counted on the path of every message, rendered once each. */
const keys = new Map<string, string>();
const MAX_CACHED_KEYS = 1_000;

function key(labels: Labels): string {
  let raw = '';
  for (const name in labels) raw += `${name}\u0000${labels[name]}\u0000`;
  if (raw === '') return '';
  const cached = keys.get(raw);
  if (cached !== undefined) return cached;
  const rendered = render(labels);
  if (keys.size < MAX_CACHED_KEYS) keys.set(raw, rendered);
  return rendered;
}

function render(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map(
      (name) =>
        `${name}="${String(labels[name]).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
    )
    .join(',');
}

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}
  abstract lines(): string[];
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines()].join(
      '\n',
    );
  }
}

export class Counter extends Metric {
  private readonly values = new Map<string, number>();
  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(key(labels)) ?? 0;
  }
  lines(): string[] {
    if (this.values.size === 0) return [`${this.name} 0`];
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ''} ${v}`);
  }
}

/** A value read when rendered, so it can never drift from the thing it measures (a gauge, or a counter kept elsewhere). */
export class Gauge extends Metric {
  constructor(
    name: string,
    help: string,
    private readonly read: () => number,
    type: 'gauge' | 'counter' = 'gauge',
  ) {
    super(name, help, type);
  }
  lines(): string[] {
    return [`${this.name} ${this.read()}`];
  }
}

export class Histogram extends Metric {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    name: string,
    help: string,
    private readonly buckets: readonly number[],
  ) {
    super(name, help, 'histogram');
  }
  observe(value: number, labels: Labels = {}): void {
    const k = key(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= (this.buckets[i] ?? 0)) s.counts[i]! += 1;
    s.sum += value;
    s.count += 1;
  }
  lines(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.series) {
      const sep = k ? `${k},` : '';
      this.buckets.forEach((le, i) => {
        out.push(`${this.name}_bucket{${sep}le="${le}"} ${s.counts[i]}`);
      });
      out.push(`${this.name}_bucket{${sep}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ''} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ''} ${s.count}`);
    }
    return out;
  }
}

export class MetricsRegistry {
  private readonly metrics: Metric[] = [];

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  gauge(name: string, help: string, read: () => number): Gauge {
    return this.add(new Gauge(name, help, read));
  }
  /** A counter whose value lives elsewhere (e.g. in the store), read when rendered. */
  counterFrom(name: string, help: string, read: () => number): Gauge {
    return this.add(new Gauge(name, help, read, 'counter'));
  }
  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, buckets));
  }
  /** The text exposition format (`Content-Type: text/plain; version=0.0.4`). */
  render(): string {
    return `${this.metrics.map((m) => m.render()).join('\n')}\n`;
  }
  private add<T extends Metric>(metric: T): T {
    if (this.metrics.some((m) => m.name === metric.name))
      throw new Error(`metric ${metric.name} registered twice`);
    this.metrics.push(metric);
    return metric;
  }
}

/** Seconds, from 0.5 ms to 10 s: store latencies. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
] as const;
