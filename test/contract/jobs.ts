// The server's own jobs on every host, on its real clock: a due wake-up fires once (the task back in progress as
// `wake`, one notice in the chat), a claim whose holder left is freed once as `lease`, and the judge (the local
// chat-completions endpoint) closes a task it rates finished as `auto_close` after the turn ends.
import { createChat, createPlan, type Plan } from '@cairn/core';
import { until } from '@cairn/core/testing';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { cairnClient } from '../../packages/server/test/helpers.js';
import { type Contract, defaultReply, freshPlan, LEASE_MS } from './contract.js';

/** A client's plan and chat as `actor`, synced with the host; `presence` makes it a holder leases watch. */
async function member(
  contract: Contract,
  planId: string,
  actor: string,
  options: { presence?: boolean } = {},
) {
  const doc = new Y.Doc();
  const plan = createPlan({ doc, actor });
  const connection = cairnClient(contract.host().ws, planId, doc, {
    token: await contract.token(planId, 'write', { sub: actor }),
    plan,
    ...(options.presence ? { presence: { id: actor, name: actor, kind: 'agent' as const } } : {}),
  });
  await connection.whenSynced();
  return { doc, plan, connection, chat: createChat(doc, { actor }) };
}

/** Every distinct `updatedBy` a task showed on `plan`, in order, recorded from now on. */
function authorsOf(plan: Plan, doc: Y.Doc, taskId: string): string[] {
  const seen: string[] = [];
  doc.on('update', () => {
    const by = plan.get(taskId)?.updatedBy;
    if (by && by !== seen.at(-1)) seen.push(by);
  });
  return seen;
}

export function jobsContract(contract: Contract): void {
  describe('jobs on the host clock', () => {
    it('wakes a due waiting task once, as `wake`, with one notice in the chat', async () => {
      const planId = freshPlan('acme:conv');
      const agent = await member(contract, planId, 'agent:scout');
      const task = agent.plan.add({
        title: "Book a table at Luigi's",
        status: 'waiting_user',
        wakeAt: new Date(Date.now() + 1500).toISOString(),
        nextStep: 'Ask the user whether 8 pm works',
      });
      await agent.connection.whenAcknowledged();
      await until(agent.plan, (p) => p.get(task.id)?.status === 'in_progress');
      expect(agent.plan.get(task.id)).toMatchObject({
        status: 'in_progress',
        wakeAt: null,
        updatedBy: 'wake',
      });
      // One more acknowledged round trip: anything the wake-up wrote has arrived by now, and it wrote once.
      agent.doc.getMap('scratch').set('ping', 1);
      await agent.connection.whenAcknowledged();
      const notices = agent.chat.list().filter((m) => m.actor === 'wake');
      expect(notices).toEqual([
        expect.objectContaining({
          role: 'system',
          text: `Task wake-up: "Book a table at Luigi's" is due. Next step: Ask the user whether 8 pm works`,
        }),
      ]);
    });

    it(`frees a claim once as \`lease\` after its holder is gone for ${LEASE_MS} ms`, async () => {
      const planId = freshPlan('acme');
      const holder = await member(contract, planId, 'agent:holder', { presence: true });
      const watcher = await member(contract, planId, 'agent:watcher');
      const task = holder.plan.add({ title: 'Deploy' });
      await until(watcher.plan, (p) => p.has(task.id));
      expect(await holder.plan.claim(task.id)).toMatchObject({ outcome: 'won', holder: 'agent:holder' });
      await until(watcher.plan, (p) => p.get(task.id)?.assignee === 'agent:holder');
      const authors = authorsOf(watcher.plan, watcher.doc, task.id);
      const left = Date.now();
      holder.connection.destroy();

      await until(watcher.plan, (p) => p.get(task.id)?.updatedBy === 'lease');
      expect(Date.now() - left).toBeGreaterThanOrEqual(LEASE_MS - 50);
      expect(watcher.plan.get(task.id)).toMatchObject({ assignee: null, status: 'pending' });
      watcher.doc.getMap('scratch').set('ping', 1);
      await watcher.connection.whenAcknowledged();
      expect(authors).toEqual(['lease']);
    });

    it('closes a task the judge rates finished, as `auto_close`, after the turn ends', async () => {
      const planId = freshPlan('acme:conv');
      const llm = contract.llm();
      const judged: string[] = [];
      llm.reply = (call) => {
        if (!call.body.messages[0]?.content.startsWith('You decide whether tasks')) return defaultReply(call);
        const shown = JSON.parse(call.body.messages.at(-1)!.content) as { tasks: Array<{ id: string }> };
        judged.push(...shown.tasks.map((t) => t.id));
        return {
          content: JSON.stringify({
            tasks: shown.tasks.map((t) => ({
              id: t.id,
              completed: 0.95,
              abandoned: 0.01,
              reason: 'Booked.',
            })),
          }),
        };
      };
      const agent = await member(contract, planId, 'agent:scout');
      const user = createChat(agent.doc, { actor: 'user:ann' });
      const task = agent.plan.add({ title: "Book a table at Luigi's", status: 'in_progress' });
      user.append({ role: 'user', text: '8 pm is fine.' });
      agent.chat.append({ role: 'assistant', text: "Your table at Luigi's is booked for 8 pm." });
      await until(agent.plan, (p) => p.get(task.id)?.status === 'done');
      expect(agent.plan.get(task.id)).toMatchObject({ updatedBy: 'auto_close' });
      expect(agent.plan.get(task.id)?.note).toMatch(/Closed as done by auto_close \(completed 0.95.*Booked/);
      expect(judged).toEqual([task.id]);
    });
  });
}
