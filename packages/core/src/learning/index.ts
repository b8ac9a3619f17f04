/**
 * @cairn/core/learning: procedures learned from the traces of agents' tool calls (docs/SCHEMA.md, "Skills"):
 * recording traces, distilling and storing skills, matching them to a task and offering them to a model.
 *
 * @packageDocumentation
 */

export type { LearnedContext } from './context.js';
export { learnedProcedures } from './context.js';
export type { TraceSample } from './distill.js';
export { offlineDistill } from './distill.js';
export { assertPlanDocId, isPlanDocId, ownerOfDerivedDoc } from './documents.js';
export { exampleOf, skillOfKind } from './kind.js';
export { knownTools, learnableCalls } from './known-tools.js';
export type { LearnInput, SkillChange } from './library.js';
export {
  learnSkill,
  readChanges,
  readSkill,
  readSkills,
  recordSkillOutcome,
  requireSkill,
  SKILL_CHANGES,
  SKILL_KEYS,
  SKILL_LIMITS,
  SKILLS_SUFFIX,
  sameProcedure,
  scopeOf,
  scopeOfSkillsDoc,
  setSkillStatus,
  skillsDocId,
} from './library.js';
export { contentWords, matchSkills, renderLearnedProcedures, renderSkill } from './match.js';
export { argumentShape, shapeText } from './shape.js';
export type {
  Skill,
  SkillAuthor,
  SkillDraft,
  SkillExample,
  SkillPitfall,
  SkillStats,
  SkillStatus,
  SkillStep,
  SkillVersion,
} from './skill.js';
export {
  currentVersion,
  parseSkillDraft,
  SKILL_DRAFT_SHAPE,
  SKILL_FORMAT,
  SKILL_STATUSES,
  SkillDraftSchema,
  SkillSchema,
  successRate,
} from './skill.js';
export { LEARNED_PROCEDURE_TOOL, learnedProcedureTool } from './tool.js';
export type { SkillOffer, TraceBound, TraceCall } from './traces.js';
export {
  callsForTask,
  clearOffer,
  DEFAULT_TRACE_BOUND,
  MAX_TRACE_ARGS_CHARS,
  planOfTraceDoc,
  readCalls,
  readOffer,
  recordCall,
  recordOffer,
  TRACE_KEYS,
  TRACE_SUFFIX,
  TraceCallSchema,
  traceDocId,
  traceRecorder,
  trimTrace,
} from './traces.js';
