// Which learned skills fit a request: keyword matching of trigger phrases against a task's goal and the latest
// user message (seed 001: no embeddings), and the `learned_procedures` context text that offers them.
import { inline, inlineMarked } from '../render/view.js';
import { searchWords } from '../search.js';
import { shapeText } from './shape.js';
import { currentVersion, type Skill, successRate } from './skill.js';

const STOPWORDS = new Set(
  (
    'a an the and or but to of for in on at by with from into onto as is are was were be been being it its this ' +
    'that these those i me my we our you your he she they them their please can could would should will shall ' +
    'do does did done have has had not no so then than there here some any all up out about over just also ' +
    'get got make let lets us'
  ).split(' '),
);

/** The words of a text that carry meaning: lower-cased, without stop words and single letters. */
export function contentWords(text: string): string[] {
  return searchWords(text).filter((w) => w.length > 1 && !STOPWORDS.has(w));
}

/** A word of the text matches a trigger word when either starts with the other ("tables" / "table"). */
function wordMatches(word: string, trigger: string): boolean {
  return word.startsWith(trigger) || (trigger.startsWith(word) && word.length >= 4);
}

/** How well a phrase fits: the number of its words, when every one of them is in the text; else 0. */
export function phraseScore(phrase: string, words: readonly string[]): number {
  const wanted = contentWords(phrase);
  if (wanted.length === 0) return 0;
  return wanted.every((t) => words.some((w) => wordMatches(w, t))) ? wanted.length : 0;
}

/**
 * Active skills whose trigger phrases fit any of `texts`, best first (most trigger words matched, then success
 * rate), at most `limit`.
 */
export function matchSkills(skills: readonly Skill[], texts: readonly string[], limit = 3): Skill[] {
  const words = texts.flatMap((t) => contentWords(t));
  if (words.length === 0) return [];
  const scored: Array<{ skill: Skill; score: number; rate: number }> = [];
  for (const skill of skills) {
    if (skill.status !== 'active') continue;
    const version = currentVersion(skill);
    const score = Math.max(0, ...version.triggers.map((t) => phraseScore(t, words)));
    if (score > 0) scored.push({ skill, score, rate: successRate(version) ?? 0.5 });
  }
  scored.sort((a, b) => b.score - a.score || b.rate - a.rate || (a.skill.id < b.skill.id ? -1 : 1));
  return scored.slice(0, limit).map((s) => s.skill);
}

/** One skill as a model reads it. */
export function renderSkill(skill: Skill): string {
  const v = currentVersion(skill);
  const rate = successRate(v);
  const record =
    rate === null ? 'not yet used' : `${v.stats.done} of ${v.stats.done + v.stats.failed} tasks succeeded`;
  const by = v.author.kind === 'model' ? '' : '; recorded from the tool calls, not written by a model';
  // Everything below was written by a plan's writer or by a model reading a trace: each item stays on its line,
  // as task titles do, and the name cannot show a "[skill …]" record of its own.
  const lines = [
    `- ${inlineMarked(v.name)} [skill ${skill.id}, version ${v.version}; ${record}${by}]`,
    `  When: ${v.triggers.map((t) => JSON.stringify(t)).join(', ')}`,
    ...v.steps.map((s, i) => `  ${i + 1}. ${s.tool} ${shapeText(s.args)}${s.note ? ` (${s.note})` : ''}`),
  ];
  for (const p of v.pitfalls)
    lines.push(
      `  Pitfall: ${p.tool} was refused (${p.error}${p.message ? `: ${p.message}` : ''})${p.fix ? `: ${p.fix}` : ''}`,
    );
  return lines.map(inline).join('\n');
}

/** The `learned_procedures` section's text for these skills; empty when there are none (the section is skipped). */
export function renderLearnedProcedures(skills: readonly Skill[]): string {
  if (skills.length === 0) return '';
  return [
    'Learned procedures (from earlier finished tasks; follow one when the request fits it):',
    ...skills.map(renderSkill),
  ].join('\n');
}
