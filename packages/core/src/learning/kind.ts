// The kind of task a procedure is for: the words its goals share, with the parts that vary (and the values the
// calls took from the goal) as slots, e.g. "Book a table for <party> at <restaurant> on <day>". The next finished
// task is distilled with the earlier traces of its kind, found by these words; traces of two kinds never mix.
import type { Json } from '../schema.js';
import { searchWords } from '../search.js';
import { contentWords, phraseScore } from './match.js';
import { argumentShape } from './shape.js';
import {
  currentVersion,
  type Skill,
  type SkillExample,
  type SkillExampleCall,
  type TraceSample,
} from './skill.js';

/** Traces kept per skill to learn the next one of its kind with. */
export const MAX_EXAMPLES = 5;
/** A value the calls gave that is at most this many words long may name a slot of the goal. */
const SLOT_VALUE_WORDS = 4;

interface Token {
  text: string;
  /** The white space before it in the goal, kept so the name reads as the goal was written. */
  gap: string;
  /** Its words, lower-cased, as the comparison sees them ("Luigi’s" → "luigi s"). */
  key: string;
  /** The argument it filled, when a call gave it as a value (`party` for the 8 of "for 8"). */
  slot: string | null;
  varies: boolean;
}

/**
 * The procedure's name and trigger phrases for traces of one kind (the last is the newest): the newest goal with
 * every part that is not in all of the goals, or that a call took as an argument value, as a slot. Triggers are the
 * first two shared words and all of them (at most six).
 */
export function nameOfKind(samples: readonly TraceSample[]): { name: string; triggers: string[] } {
  const newest = samples.at(-1)!;
  const tokens = tokensOf(newest.goal);
  for (const other of samples.slice(0, -1)) {
    const common = commonMask(
      tokens.map((t) => t.key),
      tokensOf(other.goal).map((t) => t.key),
    );
    for (const [i, token] of tokens.entries()) if (!common[i]) token.varies = true;
  }
  markArgumentSlots(tokens, newest);
  let name = '';
  let lastLabel: string | null = null;
  for (const token of tokens) {
    const slotted = token.varies || token.slot !== null;
    const label = slotted ? `<${token.slot ?? '…'}>` : null;
    // A run of one slot's words (or of words that merely varied) is one slot.
    if (label === null || label !== lastLabel) name += `${token.gap}${label ?? token.text}`;
    lastLabel = label;
  }
  name = name.trim();
  const fixed = tokens.filter((t) => !t.varies && t.slot === null).map((t) => t.text);
  const words = contentWords(fixed.join(' '));
  if (words.length === 0) name = firstSentence(newest.goal);
  if (name.length > 120) name = `${name.slice(0, 119)}…`;
  const phrases = new Set<string>();
  const source = words.length > 0 ? words : contentWords(newest.goal);
  if (source.length >= 2) phrases.add(source.slice(0, 2).join(' '));
  if (source.length > 0) phrases.add(source.slice(0, 6).join(' '));
  if (phrases.size === 0) phrases.add(newest.goal.trim().slice(0, 120) || 'learned procedure');
  return {
    name: name.length >= 3 ? name : 'Learned procedure',
    triggers: [...phrases].filter((p) => p.length >= 2),
  };
}

/** A goal's first sentence: what a name is made of (as a task title usually is the whole of it). */
function firstSentence(goal: string): string {
  return goal.trim().split(/(?<=[.!?])\s/)[0] ?? '';
}

function tokensOf(goal: string): Token[] {
  return [...firstSentence(goal).matchAll(/(\s*)(\S+)/g)].slice(0, 60).map(([, gap = '', text = '']) => ({
    text,
    gap,
    key: searchWords(text).join(' '),
    slot: null,
    varies: false,
  }));
}

/** Which of `a`'s tokens are in a longest common subsequence with `b` (tokens without words always are). */
function commonMask(a: readonly string[], b: readonly string[]): boolean[] {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const table = new Array<number>(rows * cols).fill(0);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * cols + j] =
        a[i] === b[j]
          ? table[(i + 1) * cols + j + 1]! + 1
          : Math.max(table[(i + 1) * cols + j]!, table[i * cols + j + 1]!);
    }
  }
  const mask = a.map((key) => key === '');
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      mask[i] = true;
      i++;
      j++;
    } else if (table[(i + 1) * cols + j]! >= table[i * cols + j + 1]!) i++;
    else j++;
  }
  return mask;
}

/** Marks the runs of the goal a successful call gave as a short argument value, with that argument's name. */
function markArgumentSlots(tokens: Token[], sample: TraceSample): void {
  for (const call of sample.calls) {
    if (call.outcome !== 'ok') continue;
    for (const [key, value] of leaves(call.args)) {
      const words = searchWords(String(value));
      if (words.length === 0 || words.length > SLOT_VALUE_WORDS) continue;
      if (typeof value === 'string' && argumentShape(value) === value) continue; // vocabulary, not a value
      const wanted = words.join(' ');
      for (let start = 0; start < tokens.length; start++) {
        let joined = '';
        for (let end = start; end < tokens.length && joined.length < wanted.length; end++) {
          joined = joined === '' ? tokens[end]!.key : `${joined} ${tokens[end]!.key}`;
          if (joined === wanted) {
            for (let k = start; k <= end; k++) tokens[k]!.slot ??= key;
            break;
          }
        }
      }
    }
  }
}

/** The named string and number values of a JSON value, each with the key it was given under. */
function leaves(value: Json, key = 'value', out: Array<[string, string | number]> = [], depth = 6) {
  if (depth < 0 || out.length > 200) return out;
  if (typeof value === 'string' || typeof value === 'number') out.push([key, value]);
  else if (Array.isArray(value)) for (const item of value) leaves(item, key, out, depth - 1);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) leaves(v, k, out, depth - 1);
  }
  return out;
}

/** Whether a goal is of a skill's kind: the skill's first trigger phrase (its two leading shared words) fits it. */
export function isOfKind(skill: Skill, goal: string): boolean {
  const first = currentVersion(skill).triggers[0];
  return first !== undefined && phraseScore(first, contentWords(goal)) > 0;
}

/**
 * The skill of a finished task's kind, and the traces it was learned from: the skill whose kind fits the goal and
 * that has the most traces with the same successful tools in order. Null when no skill kept traces of this kind.
 */
export function skillOfKind(skills: readonly Skill[], sample: TraceSample): Skill | null {
  const sequence = toolSequence(sample);
  let best: { skill: Skill; aligned: number } | null = null;
  for (const skill of skills) {
    if (skill.examples.length === 0 || !isOfKind(skill, sample.goal)) continue;
    const aligned = skill.examples.filter((e) => toolSequence(e) === sequence).length;
    if (!best || aligned > best.aligned) best = { skill, aligned };
  }
  return best?.skill ?? null;
}

/** The successful calls of a trace, in order. */
export function succeeded(sample: TraceSample): SkillExampleCall[] {
  return sample.calls.filter((c) => c.outcome === 'ok');
}

/** The tools of a trace's successful calls, in order: traces are aligned step by step only when these match. */
export function toolSequence(sample: TraceSample): string {
  return succeeded(sample)
    .map((c) => c.tool)
    .join('>');
}

/** A trace as a skill keeps it: at most 50 calls, arguments over 1,000 characters of JSON as their shape. */
export function exampleOf(sample: TraceSample): SkillExample {
  return {
    planId: sample.planId,
    taskId: sample.taskId,
    goal: sample.goal.slice(0, 2000),
    calls: sample.calls.slice(0, 50).map((c) => ({
      tool: c.tool,
      args: JSON.stringify(c.args).length > 1000 ? argumentShape(c.args) : c.args,
      outcome: c.outcome,
      ...(c.error ? { error: c.error.slice(0, 500) } : {}),
    })),
  };
}
