// The scripted session every framework's test drives through its own agent loop: the model adds two tasks,
// makes one malformed call, claims a task and closes it, then answers. Meanwhile a person adds a task (while the
// model "thinks" on its third step), so the step after must be told of it as a delta. The checks are the same
// for every framework; each test only says how its framework shows a prompt.
import { expect } from 'vitest';
import { createPlan, type Plan, type TaskChange } from '../../src/index.js';

export const AGENT = 'agent:scripted';
export const PERSON = 'user:ann';

export interface ScriptedCall {
  name: string;
  args: Record<string, unknown>;
}

/** What the model saw on one call: its system prompt, and everything else it read, as text. */
export interface SeenCall {
  system: string;
  rest: string;
}

export interface ScriptedSession {
  plan: Plan;
  /** The model's move on call `step`, given the text of the last tool result it read ('' before any). */
  next(step: number, lastResult: string): ScriptedCall | string;
  /** Every change made to the plan, with its actor. */
  changes: TaskChange[];
  /**
   * Runs every check on what the model saw, call by call. `refusal`: how the framework words a malformed call
   * (default: the toolkit's own `invalid_argument`; a framework that validates first has its own words).
   */
  check(seen: SeenCall[], refusal?: RegExp): void;
}

export const FINAL_TEXT = 'All done: one task written, one left to review.';

export function scriptedSession(plan: Plan = createPlan({ actor: AGENT })): ScriptedSession {
  const person = plan.withActor(PERSON);
  person.add({ title: 'Seed the blog' });
  const changes: TaskChange[] = [];
  plan.onChange((event) => changes.push(...event.changes));
  let tasksBeforeMalformed = -1;
  let claimedId = '';
  return {
    plan,
    changes,
    next(step, lastResult) {
      switch (step) {
        case 0:
          return { name: 'add_tasks', args: { tasks: [{ title: 'Write post' }, { title: 'Review post' }] } };
        case 1:
          tasksBeforeMalformed = plan.list().length;
          return { name: 'add_tasks', args: { tasks: [{ title: 5 }] } };
        case 2:
          // Someone else changes the plan while the model works out its next move.
          person.add({ title: 'Pick a cover image' });
          return { name: 'claim_next', args: { parent: null } };
        case 3: {
          claimedId = /"id":\s*"([^"]+)"/.exec(lastResult)?.[1] ?? '';
          return { name: 'update_tasks', args: { updates: [{ id: claimedId, status: 'done' }] } };
        }
        default:
          return FINAL_TEXT;
      }
    },
    check(seen, refusal = /invalid_argument/) {
      expect(seen).toHaveLength(5);
      // The plan as the script left it, every task written once.
      const byTitle = new Map(plan.list().map((t) => [t.title, t]));
      expect([...byTitle.keys()].sort()).toEqual(
        ['Pick a cover image', 'Review post', 'Seed the blog', 'Write post'].sort(),
      );
      // claim_next takes the first ready task: the person's seed task came first.
      const claimed = plan.get(claimedId);
      expect(claimed?.title).toBe('Seed the blog');
      expect(claimed?.status).toBe('done');
      expect(claimed?.assignee).toBe(AGENT);
      expect(byTitle.get('Write post')?.status).toBe('pending');
      // Every write carries its actor: the agent's through the toolkit, the person's own.
      expect(new Set(changes.map((c) => c.actor))).toEqual(new Set([AGENT, PERSON]));
      for (const c of changes) {
        const title = plan.get(c.id)?.title;
        expect(c.actor).toBe(title === 'Pick a cover image' ? PERSON : AGENT);
      }
      expect(byTitle.get('Write post')?.createdBy).toBe(AGENT);
      // The model read each tool's result on the call after it.
      expect(seen[1]!.rest).toContain('Review post');
      expect(seen[1]!.rest).toMatch(/"?added"?/);
      // The malformed call came back as an error the model could read, and wrote nothing.
      expect(seen[2]!.rest).toMatch(refusal);
      expect(seen[2]!.rest).toMatch(/tasks\.0\.title/);
      expect(tasksBeforeMalformed).toBe(3);
      expect(changes.filter((c) => c.kind === 'added' && c.actor === AGENT)).toHaveLength(2);
      expect(seen[3]!.rest).toContain(claimedId);
      expect(seen[4]!.rest).toMatch(/"?updated"?/);
      expect(seen[4]!.rest).toContain('done');
      // The plan once, byte-identical in every call's system prompt; the person's change as a delta after.
      expect(seen[0]!.system).toContain('Seed the blog');
      for (const call of seen) expect(call.system).toBe(seen[0]!.system);
      expect(seen[2]!.rest).not.toContain('Pick a cover image');
      expect(seen[3]!.rest).toContain('Changes since your last turn');
      expect(seen[3]!.rest).toContain('Pick a cover image');
      const planLine = seen[0]!.system.split('\n').find((line) => line.includes('Seed the blog'))!;
      for (const call of seen) expect(call.rest).not.toContain(planLine);
    },
  };
}
