// Learning in a Durable Object, as on `cairn serve`: the same Learner and routes. Its documents are in objects of
// their own (a plan's traces in `<plan>#traces`, a scope's skills in `<scope>#skills`, reached through
// ObjectDocuments); its jobs and settle times are due times of the object's one alarm; the plans with queued jobs
// are kept in the object's own SQLite, so a woken object finds them without asking the trace's object.

import type { Hono } from 'hono';
import { distillerFromEnv } from '../extensions/learning/distiller.js';
import { Learner } from '../extensions/learning/learner.js';
import { registerLearningRoutes } from '../extensions/learning/routes.js';
import type { PlanRoutesOptions } from '../http/plans.js';
import type { SyncHub } from '../hub/hub.js';
import type { IndexFile } from '../index-file.js';
import type { Logger } from '../log.js';
import { type CairnWorkerEnv, stringVars } from './env.js';
import type { SqlStorage } from './workers-types.js';

/** The object's table of small named values, made by CairnPlanObject as it starts (its document id is one). */
const OBJECT_TABLE = 'cairn_object';

/**
 * Adds the learner to `hub` and its routes to `app`; resolves once it knows its queued jobs. Gives what the plan
 * routes need of it (recording tool calls, offering learned procedures).
 */
export async function useLearning(
  hub: SyncHub,
  app: Hono,
  options: {
    sql: SqlStorage;
    env: CairnWorkerEnv;
    logger: Logger;
    planExists: NonNullable<PlanRoutesOptions['planExists']>;
  },
): Promise<Pick<PlanRoutesOptions, 'learning' | 'recordCall'>> {
  const { logger } = options;
  const learner = hub.use(
    (host) =>
      new Learner(host, {
        index: objectValue(options.sql, 'learning index'),
        // The judge's endpoint, as `cairn serve` uses it; without one the offline distiller writes skills.
        distiller: distillerFromEnv(stringVars(options.env)),
        logger,
      }),
  );
  await learner.ready;
  registerLearningRoutes(app, hub, learner, { planExists: options.planExists });
  return {
    learning: learner,
    // Kept in the learner's batch, written on the object's alarm (a failed write is logged by the learner).
    recordCall: (planId, call) => learner.recordCall(planId, call),
  };
}

/** A named value of the object's table, as an extension's index. */
function objectValue(sql: SqlStorage, key: string): IndexFile {
  return {
    where: `${OBJECT_TABLE}.${key}`,
    read: async () =>
      sql.exec<{ value: string }>(`SELECT value FROM ${OBJECT_TABLE} WHERE key = ?`, key).toArray()[0]
        ?.value ?? null,
    write: async (text) => {
      sql.exec(`INSERT OR REPLACE INTO ${OBJECT_TABLE} (key, value) VALUES (?, ?)`, key, text);
    },
  };
}
