// MCP agents on three instances of a cluster (real redis-server and PostgreSQL) race for one task, trial after
// trial: each is `cairn mcp`'s own pair, a live plan synced through its instance and the MCP server on it, driven by
// the MCP SDK's Client. Exactly one wins, every loser is told who, and every replica ends with that winner.

import { until } from '@cairn/core/testing';
import { createCairnMcpServer, openLivePlan } from '@cairn/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, it } from 'vitest';
import { startInstance, useClusterServices } from '../packages/server/test/cluster-helpers.js';
import { onCleanup } from '../packages/server/test/helpers.js';
import { expectOneWinner, expectReplicasSettle } from './race-trial.js';

process.setMaxListeners(100);
const services = useClusterServices();
const TRIALS = Number(process.env.CAIRN_RACE_TRIALS ?? 0) || 100;

async function mcpAgent(url: string, planId: string, actor: string) {
  const live = await openLivePlan({ planId, actor, server: url, syncTimeoutMs: 20_000 });
  const mcp = createCairnMcpServer({ plan: live.plan, planId, sinceLastCall: false });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = new Client({ name: actor, version: '1.0.0' });
  await client.connect(clientSide);
  onCleanup(async () => {
    await client.close();
    await mcp.close();
    await live.close();
  });
  return { actor, plan: live.plan, client };
}

// biome-ignore lint/suspicious/noExplicitAny: a tool's JSON result, whose shape each assertion states
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }> };
  return JSON.parse(result.content[0]!.text);
}

describe('MCP agents over three instances', () => {
  it(`claim: exactly one winner in each of ${TRIALS} trials, and every replica agrees`, async () => {
    const instances = await Promise.all([0, 1, 2].map(() => startInstance(services)));
    const planId = 'race:cluster:mcp';
    const agents = await Promise.all(
      Array.from({ length: 6 }, (_, i) => mcpAgent(instances[i % 3]!.url, planId, `agent:m${i}`)),
    );
    for (let trial = 0; trial < TRIALS; trial++) {
      // A different agent (and instance) creates each task, so the race starts where some copies just got it.
      const task = agents[trial % agents.length]!.plan.add({ title: `Task ${trial}` });
      await Promise.all(agents.map((a) => until(a.plan, () => a.plan.has(task.id))));
      const results = await Promise.all(agents.map((a) => call(a.client, 'claim', { id: task.id })));
      const winner = expectOneWinner(
        results,
        agents.map((a) => a.actor),
        `trial ${trial}`,
      );
      await expectReplicasSettle(
        agents.map((a) => a.plan),
        task.id,
        winner,
      );
    }
  }, 180_000);
});
