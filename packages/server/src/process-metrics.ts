// Node's default process metrics (CPU, memory, event loop, GC) from prom-client, collected once per process and
// shown beside every registry's own on a Node host: `new MetricsRegistry({ extra: nodeProcessMetrics })`.
import * as client from 'prom-client';

let registry: client.Registry | null = null;

export function nodeProcessMetrics(): Promise<string> {
  if (!registry) {
    registry = new client.Registry();
    client.collectDefaultMetrics({ register: registry });
  }
  return registry.metrics();
}
