// The read tool an agent uses to look up a learned procedure: by the skill id shown in `learned_procedures`, or
// by keywords. Offered beside a toolkit's families (`extraTools`) by whoever has the scope's skills at hand.
import * as z from 'zod/mini';
import { CairnError } from '../errors.js';
import { defineTool } from '../tools/json-schema.js';
import { about, type ToolSpec } from '../tools/tool.js';
import { matchSkills, renderSkill } from './match.js';
import { currentVersion, type Skill, successRate } from './skill.js';

export const LEARNED_PROCEDURE_TOOL = 'get_learned_procedure';

/** `skills` is asked on each call, so the tool always sees the library as it is now. */
export function learnedProcedureTool(skills: () => readonly Skill[]): ToolSpec<unknown> {
  return defineTool({
    name: LEARNED_PROCEDURE_TOOL,
    description:
      'Look up a learned procedure (a way of doing a task that worked before): by its skill id from the ' +
      '"Learned procedures" context, or by keywords of what you are asked to do. Returns its steps, with the ' +
      'tools and argument shapes to use, and the pitfalls seen.',
    input: z
      .strictObject({
        skillId: about(
          z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
          'The id shown as [skill <id>, ...].',
        ),
        query: about(
          z.optional(z.string().check(z.minLength(1), z.maxLength(500))),
          'Keywords of the request, e.g. "book table".',
        ),
      })
      .check(
        z.refine(
          (a) => (a.skillId === undefined) !== (a.query === undefined),
          'give exactly one of skillId and query',
        ),
      ),
    annotations: { readOnlyHint: true },
    run({ skillId, query }) {
      const all = skills();
      const found =
        skillId !== undefined ? all.filter((s) => s.id === skillId) : matchSkills(all, [query ?? '']);
      if (skillId !== undefined && found.length === 0) {
        const known = all.filter((s) => s.status === 'active').map((s) => s.id);
        throw new CairnError(
          'not_found',
          `There is no learned procedure "${skillId}"; known: ${known.join(', ') || '(none yet)'}.`,
          { valid: known },
        );
      }
      return {
        procedures: found.map((s) => ({
          skillId: s.id,
          version: currentVersion(s).version,
          status: s.status,
          successRate: successRate(currentVersion(s)),
          text: renderSkill(s),
        })),
      };
    },
  });
}
