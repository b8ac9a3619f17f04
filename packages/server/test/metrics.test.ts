// The metrics registry: the Prometheus text format from the API the hub uses, label names fixed by first
// use, values read at scrape time, and Node's default process metrics (prom-client) beside ours on Node.
import { describe, expect, it } from 'vitest';
import { MetricsRegistry, nodeProcessMetrics } from '../src/index.js';

describe('MetricsRegistry', () => {
  it('renders counters, read-at-scrape values and histograms in the Prometheus text format', async () => {
    const registry = new MetricsRegistry();
    const plain = registry.counter('t_plain_total', 'Plain.');
    const labelled = registry.counter('t_labelled_total', 'Labelled.');
    let rooms = 3;
    registry.gauge('t_rooms', 'Rooms.', () => rooms);
    registry.counterFrom('t_from_total', 'Kept elsewhere.', () => 42);
    const latency = registry.histogram('t_seconds', 'Latency.', [0.001, 0.01]);
    plain.inc({}, 2);
    labelled.inc({ kind: 'a"b' });
    labelled.inc({ kind: 'c' }, 5);
    latency.observe(0.005, { op: 'load' });
    rooms = 4;
    const text = await registry.render();
    expect(text).toContain('# TYPE t_plain_total counter\nt_plain_total 2\n');
    expect(text).toContain('t_labelled_total{kind="a\\"b"} 1');
    expect(text).toContain('t_labelled_total{kind="c"} 5');
    expect(text).toContain('# TYPE t_rooms gauge\nt_rooms 4\n');
    expect(text).toContain('# TYPE t_from_total counter\nt_from_total 42\n');
    expect(text).toContain('t_seconds_bucket{le="0.001",op="load"} 0');
    expect(text).toContain('t_seconds_bucket{le="0.01",op="load"} 1');
    expect(text).toContain('t_seconds_bucket{le="+Inf",op="load"} 1');
    expect(text).toContain('t_seconds_count{op="load"} 1');
    expect(text).not.toContain('process_cpu_seconds_total');
    expect(labelled.get({ kind: 'c' })).toBe(5);
    expect(plain.get()).toBe(2);
  });

  it('shows an unused counter as 0 and refuses a second metric of one name or a use with other labels', async () => {
    const registry = new MetricsRegistry();
    const errors = registry.counter('t_errors_total', 'Errors.');
    expect(await registry.render()).toContain('t_errors_total 0');
    expect(() => registry.counter('t_errors_total', 'Again.')).toThrow(/registered twice/);
    errors.inc({ kind: 'x' });
    expect(() => errors.inc({ reason: 'y' })).toThrow(/recorded with labels \[kind\]; got \[reason\]/);
    const text = await registry.render();
    expect(text).toContain('t_errors_total{kind="x"} 1');
    expect(text).not.toContain('t_errors_total 0');
  });

  it("adds Node's default process metrics, shared by every registry in the process", async () => {
    const a = new MetricsRegistry({ extra: nodeProcessMetrics });
    const b = new MetricsRegistry({ extra: nodeProcessMetrics });
    a.counter('t_a_total', 'A.');
    for (const text of [await a.render(), await b.render()]) {
      expect(text).toMatch(/^process_cpu_seconds_total \d/m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    }
    expect(await b.render()).not.toContain('t_a_total');
  });
});
