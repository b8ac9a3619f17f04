// The learning queue's jobs: traces waiting to be distilled, kept in the plan's trace document (`pending`) by the
// server alone (trace-guard.ts undoes a client's change), read back checked.
import { TRACE_KEYS, TraceCallSchema } from '@cairn/core/learning';
import { ActorSchema } from '@cairn/core/protocol';
import type * as Y from 'yjs';
import * as z from 'zod';

/** A trace waiting to be distilled, kept in the plan's trace document (`pending`). */
export const DistillJobSchema = z.object({
  id: z.string().min(1).max(80),
  planId: z.string().min(1),
  taskId: z.string().nullable(),
  goal: z.string().max(2000),
  calls: z.array(TraceCallSchema),
  queuedAt: z.number(),
  queuedBy: ActorSchema,
  attempts: z.number().int().min(0),
  nextAt: z.number(),
  lastError: z.string().nullable(),
});
export type DistillJob = z.infer<typeof DistillJobSchema>;

/** Jobs kept per plan; the oldest go first (a plan that closes tasks while the model is down for days). */
const MAX_PENDING = 50;

/** The plan's queued jobs, oldest first (an entry that is not a job is left out). */
export function readPending(doc: Y.Doc): DistillJob[] {
  const out: DistillJob[] = [];
  for (const raw of doc.getMap<unknown>(TRACE_KEYS.pending).values()) {
    const parsed = DistillJobSchema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
  }
  return out.sort((a, b) => a.queuedAt - b.queuedAt || (a.id < b.id ? -1 : 1));
}

/** Queues a job, as `learning`: it replaces a job of the same task, and the oldest go past `MAX_PENDING`. */
export function putJob(doc: Y.Doc, job: DistillJob): void {
  const pending = doc.getMap<unknown>(TRACE_KEYS.pending);
  doc.transact(() => {
    // A task closed again replaces its job that has not run yet: one queued distillation per close.
    for (const old of readPending(doc)) {
      if (old.taskId !== null && old.taskId === job.taskId) pending.delete(old.id);
    }
    pending.set(job.id, job);
    const all = readPending(doc);
    for (const old of all.slice(0, Math.max(0, all.length - MAX_PENDING))) pending.delete(old.id);
  }, 'learning');
}
