// The server's Prometheus metrics: prom-client (the exposition format, Node's default process metrics) behind the
// small API the hub and its extensions use. Label values must stay few (a message type, an operation): never a
// plan id or a user.
import * as client from 'prom-client';

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

/**
 * One prom-client metric whose label names come from its first use, so callers never declare them (prom-client
 * wants them up front). Until something is recorded the metric has no labels, and a counter reads `name 0`.
 */
class Series<M extends client.Counter | client.Histogram> {
  private metric: M;
  private names: string | null = null;

  constructor(
    private readonly registry: client.Registry,
    private readonly name: string,
    private readonly make: (labelNames: string[]) => M,
  ) {
    this.metric = this.register([]);
  }

  /** The metric to record labels named `names` on: made on first use; later uses must name the same ones. */
  for(names: string): M {
    if (this.names === names) return this.metric;
    if (this.names !== null) {
      throw new Error(
        `metric ${this.name} is recorded with labels [${this.names}]; got [${names}] (every use names the same labels)`,
      );
    }
    this.names = names;
    if (names === '') return this.metric;
    this.registry.removeSingleMetric(this.name);
    this.metric = this.register(names.split(','));
    return this.metric;
  }

  private register(labelNames: string[]): M {
    const metric = this.make(labelNames);
    this.registry.registerMetric(metric);
    return metric;
  }
}

/**
 * A counter kept as plain numbers, one per label set, and handed to prom-client only when /metrics is rendered:
 * `inc` runs per message and per update, and prom-client's own (label checks, hashing) cost more than the count.
 */
export class Counter {
  private readonly series: Series<client.Counter>;
  private readonly totals = new Map<string, { labels: Labels; value: number }>();
  constructor(registry: client.Registry, name: string, help: string) {
    const totals = this.totals;
    this.series = new Series(
      registry,
      name,
      (labelNames) =>
        new client.Counter({
          name,
          help,
          labelNames,
          registers: [],
          collect() {
            this.reset();
            for (const { labels, value } of totals.values()) this.inc(labels, value);
          },
        }),
    );
  }
  inc(labels: Labels = {}, by = 1): void {
    const { names, key } = labelIdentity(labels);
    this.series.for(names);
    const total = this.totals.get(key);
    if (total) total.value += by;
    else this.totals.set(key, { labels: { ...labels }, value: by });
  }
  get(labels: Labels = {}): number {
    return this.totals.get(labelIdentity(labels).key)?.value ?? 0;
  }
}

export class Histogram {
  private readonly series: Series<client.Histogram>;
  constructor(registry: client.Registry, name: string, help: string, buckets: readonly number[]) {
    this.series = new Series(
      registry,
      name,
      (labelNames) => new client.Histogram({ name, help, labelNames, buckets: [...buckets], registers: [] }),
    );
  }
  observe(value: number, labels: Labels = {}): void {
    this.series.for(labelIdentity(labels).names).observe(labels, value);
  }
}

/** Node's default process metrics (CPU, memory, event loop, GC), collected once per process and shown by every registry. */
let processRegistry: client.Registry | null = null;
function processMetrics(): client.Registry {
  if (!processRegistry) {
    processRegistry = new client.Registry();
    client.collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class MetricsRegistry {
  private readonly registry = new client.Registry();
  private readonly withProcess: boolean;

  /** `processMetrics: false` leaves out Node's default process metrics (on by default). */
  constructor(options: { processMetrics?: boolean } = {}) {
    this.withProcess = options.processMetrics ?? true;
  }

  counter(name: string, help: string): Counter {
    this.unique(name);
    return new Counter(this.registry, name, help);
  }
  /** A value read when rendered, so it can never drift from the thing it measures. */
  gauge(name: string, help: string, read: () => number): void {
    this.unique(name);
    new client.Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
  /** A counter whose value lives elsewhere (e.g. in the store), read when rendered. */
  counterFrom(name: string, help: string, read: () => number): void {
    this.unique(name);
    new client.Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }
  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    this.unique(name);
    return new Histogram(this.registry, name, help, buckets);
  }
  /** The text exposition format, served with `contentType`. */
  render(): Promise<string> {
    const registries = this.withProcess ? [this.registry, processMetrics()] : [this.registry];
    return client.Registry.merge(registries).metrics();
  }
  readonly contentType = client.Registry.PROMETHEUS_CONTENT_TYPE;

  private unique(name: string): void {
    if (this.registry.getSingleMetric(name)) throw new Error(`metric ${name} registered twice`);
  }
}

/** Seconds, from 0.5 ms to 10 s: store latencies. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
] as const;
