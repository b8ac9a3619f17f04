// The documents learning keeps beside the plans, told apart from plans by their ids: a plan's trace
// (`<planId>#traces`) and a scope's skill library (`<scope>#skills`). Lists of plans leave them out, and
// whatever takes a plan id refuses them with words that say where each belongs.
import { CairnError } from '../errors.js';
import { scopeOfSkillsDoc } from './library.js';
import { planOfTraceDoc } from './traces.js';

/**
 * What a document kept beside plans is named after: the plan of `<planId>#traces`, the scope of `<scope>#skills`;
 * null for a plan. Limits on a name's length apply to this part, so every plan id that fits has a trace document
 * whose name fits too (docs/STORAGE.md, "File names").
 */
export function ownerOfDerivedDoc(docId: string): string | null {
  return planOfTraceDoc(docId) ?? scopeOfSkillsDoc(docId);
}

/** Whether `docId` names a plan, as opposed to a trace or skills document. */
export function isPlanDocId(docId: string): boolean {
  return planOfTraceDoc(docId) === null && scopeOfSkillsDoc(docId) === null;
}

/** Throws `invalid_argument` when `docId` names a trace or skills document, saying what to use instead. */
export function assertPlanDocId(docId: string): void {
  const plan = planOfTraceDoc(docId);
  if (plan !== null) {
    throw new CairnError(
      'invalid_argument',
      `"${docId}" is the trace document of plan "${plan}", not a plan: use the plan id "${plan}" here ` +
        `(its tool calls are read at GET /api/plans/${encodeURIComponent(plan)}/traces). ` +
        'A plan id cannot end with "#traces" or "#skills".',
      { field: 'planId', valid: [plan] },
    );
  }
  const scope = scopeOfSkillsDoc(docId);
  if (scope !== null) {
    throw new CairnError(
      'invalid_argument',
      `"${docId}" is the skill library of scope "${scope}", not a plan: its skills are read at ` +
        `GET /api/scopes/${encodeURIComponent(scope)}/skills. A plan id cannot end with "#traces" or "#skills".`,
      { field: 'planId' },
    );
  }
}
