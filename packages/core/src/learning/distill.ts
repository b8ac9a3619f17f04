// Turning a finished task's trace into a skill draft without a model: the tool sequence with argument shapes,
// refused calls as pitfalls with what worked next. Labelled as offline wherever it is shown.
import type { Json } from '../schema.js';
import { contentWords } from './match.js';
import { argumentShape } from './shape.js';
import type { SkillDraft, SkillPitfall, SkillStep } from './skill.js';
import type { TraceCall } from './traces.js';

/** What a distiller learns from: the goal and the calls, in order. */
export interface TraceSample {
  planId: string;
  /** The task that closed as done, or null when learning from a whole conversation. */
  taskId: string | null;
  goal: string;
  calls: TraceCall[];
}

export function offlineDistill(sample: TraceSample): SkillDraft {
  const steps: SkillStep[] = [];
  const pitfalls: SkillPitfall[] = [];
  for (const [i, call] of sample.calls.entries()) {
    const shape = argumentShape(call.args);
    if (call.outcome !== 'ok') {
      const fixed = sample.calls.slice(i + 1).find((c) => c.tool === call.tool && c.outcome === 'ok');
      if (pitfalls.length < 20) {
        pitfalls.push({
          tool: call.tool,
          error: call.outcome,
          ...(call.error ? { message: call.error } : {}),
          fix: fixed
            ? `it worked when called as ${call.tool} ${compact(argumentShape(fixed.args))}`
            : 'no later call of this tool succeeded',
        });
      }
      continue;
    }
    const last = steps.at(-1);
    if (last && last.tool === call.tool && compact(last.args) === compact(shape)) {
      const times = Number(/repeated (\d+) times/.exec(last.note ?? '')?.[1] ?? 1) + 1;
      last.note = `repeated ${times} times`;
      continue;
    }
    if (steps.length < 50) steps.push({ tool: call.tool, args: shape });
  }
  const name = nameOf(sample.goal);
  return { name, triggers: triggersOf(sample.goal), steps, pitfalls };
}

function compact(shape: Json): string {
  return JSON.stringify(shape);
}

/** The goal's first sentence, at most 120 characters. */
function nameOf(goal: string): string {
  const first = goal.trim().split(/(?<=[.!?])\s/)[0] ?? '';
  const name = first.length > 120 ? `${first.slice(0, 119)}…` : first;
  return name.length >= 3 ? name : 'Learned procedure';
}

/**
 * Trigger phrases from the goal: its first two content words (usually the verb and its object, "book table"),
 * and all of its first six.
 */
function triggersOf(goal: string): string[] {
  const words = contentWords(goal);
  const phrases = new Set<string>();
  if (words.length >= 2) phrases.add(words.slice(0, 2).join(' '));
  if (words.length > 0) phrases.add(words.slice(0, 6).join(' '));
  if (phrases.size === 0) phrases.add(goal.trim().slice(0, 120) || 'learned procedure');
  return [...phrases].filter((p) => p.length >= 2);
}
