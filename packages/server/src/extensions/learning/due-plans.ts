// The plans with queued distillations and when the soonest job of each is due: a queue of the hub's due-time index
// (hub/due-times.ts), mirrored into a cluster's shared index and kept in a small index file, so a start finds them
// without opening every trace.
import * as z from 'zod';
import type { DueQueue } from '../../hub/due-times.js';
import { type IndexFile, IndexWriter } from '../../index-file.js';
import { describeError, type Logger } from '../../log.js';
import type { SharedQueue } from './shared-queue.js';

const INDEX_VERSION = 1;
const IndexSchema = z.object({ version: z.literal(INDEX_VERSION), due: z.record(z.string(), z.number()) });
/** The queue's key of the next read of the shared index (no plan id is empty). */
const SHARED_READ = '';
/** With a shared index, jobs queued by other servers are due here too: it is read at least this often. */
const SHARED_READ_MS = 60_000;

export class DuePlans {
  private readonly writer: IndexWriter;

  constructor(
    private readonly queue: DueQueue,
    private readonly shared: SharedQueue,
    private readonly file: IndexFile | null,
    logger: Logger,
  ) {
    this.writer = new IndexWriter(
      file,
      () => this.text(),
      (error) =>
        logger.error('could not write the learning index', {
          path: file?.where,
          error: describeError(error),
        }),
    );
  }

  /** The index file's plans and times; null when there is none or it cannot be read (then it is rebuilt). */
  async read(): Promise<Record<string, number> | null> {
    try {
      const text = await this.file?.read();
      if (!text) return null;
      const parsed = IndexSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data.due : null;
    } catch {
      return null;
    }
  }

  /** Plans with a job due by `now`. */
  due(now: number): string[] {
    return this.queue.due(now).filter((planId) => planId !== SHARED_READ);
  }

  /** A job due at `at`: the plan is due then, unless it is due sooner already. */
  mark(planId: string, at: number): void {
    if (this.queue.setEarlier(planId, at)) this.shared.mark(planId, at);
    void this.save();
  }

  /** The plan's soonest job is due at `at` (null: it has none left). */
  set(planId: string, at: number | null): void {
    this.queue.set(planId, at);
    this.shared.mark(planId, at);
    void this.save();
  }

  /** Leaves a plan alone until `until` (its jobs run elsewhere, or its trace could not be opened). */
  defer(planId: string, until: number): void {
    this.queue.hold(planId, until);
  }

  /** After a sweep, with a shared index: when to read it again (its soonest time, and at least once a minute). */
  readSharedAgain(now: number): void {
    if (!this.shared.enabled) return;
    const soon = now + SHARED_READ_MS;
    this.queue.set(SHARED_READ, Math.max(now, Math.min(this.shared.next ?? soon, soon)));
  }

  /** Resolves once every change so far is written to the index file. */
  save(): Promise<void> {
    return this.writer.save();
  }

  private text(): string {
    const due = Object.fromEntries([...this.queue.entries()].filter(([planId]) => planId !== SHARED_READ));
    return JSON.stringify({ version: INDEX_VERSION, due });
  }
}
