// Turning the traces of finished tasks of one kind into a skill draft without a model: each successful call a step,
// with the argument values every trace agreed on and placeholders where they varied; each refused call a pitfall
// with what the refusal said and what the call that then worked did differently. Labelled as offline wherever it
// is shown. The procedure's name and triggers are the kind's (kind.ts).
import type { Json } from '../schema.js';
import { nameOfKind, succeeded, toolSequence } from './kind.js';
import { argumentShape, shapeText } from './shape.js';
import type { SkillDraft, SkillExampleCall, SkillPitfall, SkillStep, TraceSample } from './skill.js';

export type { TraceSample } from './skill.js';

/** Steps and pitfalls kept per draft (the draft format's bounds). */
const MAX_STEPS = 50;
const MAX_PITFALLS = 20;
/** Argument names that refer to a task of the plan the call was made on (`taskId`, `id`, `parent`, `blockedBy`). */
const TASK_REFERENCE = /^(id|ids|parent|taskId|taskIds|blockedBy|dependsOn)$/;

/**
 * A draft from one trace, or from several of one kind (oldest first; the last is the newest). Steps come from the
 * traces whose successful calls use the newest one's tools in its order; values are kept only where all of those
 * agree (from one trace alone, only vocabulary such as statuses is kept). Pitfalls come from every trace.
 */
export function offlineDistill(samples: TraceSample | readonly TraceSample[]): SkillDraft {
  const all = Array.isArray(samples) ? (samples as readonly TraceSample[]) : [samples as TraceSample];
  const newest = all.at(-1);
  if (!newest) throw new Error('offlineDistill needs at least one trace');
  const sequence = toolSequence(newest);
  const aligned = all.filter((s) => toolSequence(s) === sequence);
  const runs = aligned.map(succeeded);
  const steps: SkillStep[] = succeeded(newest)
    .slice(0, MAX_STEPS)
    .map((call, i) => ({
      tool: call.tool,
      args: runs.length >= 2 ? agreedValue(runs.map((r) => r[i]!.args)) : itemShape(call.args),
    }));
  const { name, triggers } = nameOfKind(all);
  return { name, triggers, steps, pitfalls: pitfallsOf(all) };
}

// ------------------------------------------------------------------ values

/** The value all of `values` agree on, or a placeholder of its type; objects and same-length arrays part by part. */
function agreedValue(values: readonly Json[], depth = 6): Json {
  const newest = values.at(-1) ?? null;
  if (depth <= 0) return '<…>';
  if (values.every(isRecord)) {
    const records = values as ReadonlyArray<Record<string, Json>>;
    const out: Record<string, Json> = {};
    for (const key of Object.keys(records.at(-1)!).sort().slice(0, 50)) {
      // A key not every trace gave is kept with a placeholder: the call takes it, its value is this call's own. A
      // task reference is the plan's own even when the traces agree (each conversation's first task is 1).
      const shared = records.every((r) => key in r) && !TASK_REFERENCE.test(key);
      out[key] = shared
        ? agreedValue(
            records.map((r) => r[key]!),
            depth - 1,
          )
        : itemShape(records.at(-1)![key]!, depth - 1);
    }
    return out;
  }
  const text = JSON.stringify(newest);
  if (values.every((v) => JSON.stringify(v) === text)) return newest;
  if (values.every(Array.isArray)) {
    const arrays = values as ReadonlyArray<Json[]>;
    const length = arrays[0]!.length;
    if (arrays.every((a) => a.length === length)) {
      return arrays[0]!.slice(0, 50).map((_, i) =>
        agreedValue(
          arrays.map((a) => a[i]!),
          depth - 1,
        ),
      );
    }
    return itemShape(newest, depth);
  }
  return placeholder(newest);
}

/** The shape of one trace's value with every item of an array kept (three steps stay three steps). */
function itemShape(value: Json, depth = 6): Json {
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => itemShape(v, depth - 1));
  if (isRecord(value)) {
    const out: Record<string, Json> = {};
    for (const key of Object.keys(value).sort().slice(0, 50)) out[key] = itemShape(value[key]!, depth - 1);
    return out;
  }
  return argumentShape(value, depth);
}

/** A value that varied: its type only. */
function placeholder(value: Json): Json {
  if (typeof value === 'string') return '<string>';
  if (typeof value === 'number') return '<number>';
  if (typeof value === 'boolean') return '<boolean>';
  return argumentShape(value);
}

function isRecord(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ------------------------------------------------------------------ pitfalls

/**
 * Each refused call with the call that then worked (the next successful call of the tool, else the next successful
 * call): what the refusal said and what the working call did differently. One pitfall per tool, error and fix.
 */
function pitfallsOf(samples: readonly TraceSample[]): SkillPitfall[] {
  const pitfalls = new Map<string, SkillPitfall>();
  // Newest first, so a pitfall seen in several traces keeps the newest wording.
  for (const sample of [...samples].reverse()) {
    for (const [i, call] of sample.calls.entries()) {
      if (call.outcome === 'ok') continue;
      const later = sample.calls.slice(i + 1).filter((c) => c.outcome === 'ok');
      const fixed = later.find((c) => c.tool === call.tool) ?? later[0];
      const fix = fixed ? fixText(call, fixed) : `no later call succeeded; do not call ${call.tool} so`;
      const key = `${call.tool}\n${call.outcome}\n${fixed ? changedKeys(call.args, fixed.args) : ''}`;
      if (pitfalls.has(key) || pitfalls.size >= MAX_PITFALLS) continue;
      pitfalls.set(key, {
        tool: call.tool,
        error: call.outcome,
        ...(call.error ? { message: call.error } : {}),
        fix,
      });
    }
  }
  return [...pitfalls.values()].reverse();
}

/** "it worked as set_ongoing_task with status "waiting_user" instead of "sleeping", without wakeAt". */
function fixText(refused: SkillExampleCall, fixed: SkillExampleCall): string {
  const head = `it worked as ${fixed.tool}`;
  if (fixed.tool !== refused.tool || !isRecord(refused.args) || !isRecord(fixed.args)) {
    return `${head} ${shapeText(itemShape(fixed.args))}`.slice(0, 500);
  }
  const before = refused.args;
  const after = fixed.args;
  const parts: string[] = [];
  for (const key of Object.keys(after).sort()) {
    if (!(key in before)) parts.push(`with ${key} ${quoted(after[key]!)}`);
    else if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) {
      parts.push(`with ${key} ${quoted(after[key]!)} instead of ${quoted(before[key]!)}`);
    }
  }
  for (const key of Object.keys(before).sort()) if (!(key in after)) parts.push(`without ${key}`);
  return parts.length > 0 ? `${head} ${parts.join(', ')}`.slice(0, 500) : `${head} with the same arguments`;
}

function changedKeys(before: Json, after: Json): string {
  if (!isRecord(before) || !isRecord(after)) return '';
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys]
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .sort()
    .join(',');
}

/** A value as a pitfall shows it: as given when short, else its shape. */
function quoted(value: Json): string {
  const text = JSON.stringify(value);
  return text.length <= 60 ? text : shapeText(itemShape(value));
}
