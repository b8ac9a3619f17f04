// Runs the hub's extensions' hooks in priority order, and decides what a failing hook means: a refusal
// (authenticate), a failed load, a failed flush, or a logged error that leaves the room and the others alone.
import { CairnError } from '@cairn/core';
import { describeError, type Logger } from '../log.js';
import type { AuthRequest, Extension, LoadingRoom, PlanRoom, RoomChange, RoomMessage } from './extension.js';
import type { HubMetrics } from './metrics.js';

const DEFAULT_PRIORITY = 100;

export class Extensions {
  private list: Extension[] = [];
  private readonly byMessage = new Map<number, Extension>();

  constructor(
    private readonly logger: Logger,
    private readonly metrics: HubMetrics,
  ) {}

  get all(): readonly Extension[] {
    return this.list;
  }

  /** Adds one; among equal priorities, in the order added. Throws if it routes a sub-type that is reserved or taken. */
  add(extension: Extension): void {
    for (const subType of extension.cairnMessages ?? []) {
      if (subType <= 2 || this.byMessage.has(subType)) {
        throw new CairnError('invalid_argument', `Cairn message sub-type ${subType} is reserved or taken.`, {
          subType,
        });
      }
    }
    for (const subType of extension.cairnMessages ?? []) this.byMessage.set(subType, extension);
    const priority = (e: Extension) => e.priority ?? DEFAULT_PRIORITY;
    this.list = [...this.list, extension].sort((a, b) => priority(b) - priority(a));
  }

  /** The extension that answers a Cairn sub-type. */
  forMessage(subType: number): ((message: RoomMessage) => void) | undefined {
    const extension = this.byMessage.get(subType);
    return extension?.message ? (message) => extension.message?.(message) : undefined;
  }

  async authenticate(request: AuthRequest): Promise<void> {
    for (const extension of this.list) await extension.authenticate?.(request);
  }

  /** In order; when one fails, those that loaded unload again (a store lets go of the plan) and the load fails. */
  async load(room: LoadingRoom, planRoom: PlanRoom): Promise<void> {
    const done: Extension[] = [];
    try {
      for (const extension of this.list) {
        await extension.load?.(room);
        done.push(extension);
      }
    } catch (error) {
      for (const extension of done)
        await this.safely(extension, 'unload', () => extension.unload?.(planRoom));
      throw error;
    }
  }

  /** Every extension's `loaded` (or only `one`'s, for an extension added after the plan loaded). */
  loaded(room: PlanRoom, one?: Extension): void {
    for (const extension of one ? [one] : this.list) {
      this.guard(extension, 'loaded', room.planId, () => extension.loaded?.(room));
    }
  }

  change(change: RoomChange): void {
    for (const extension of this.list) {
      this.guard(extension, 'change', change.room.planId, () => extension.change?.(change));
    }
  }

  /** Every extension's `store`, in order; rejects with the first failure. */
  async store(planId: string): Promise<void> {
    for (const extension of this.list) await extension.store?.({ planId });
  }

  /** Every extension's `unload`, all of them even when one fails; rejects with the first failure. */
  unload(room: PlanRoom): Promise<void> {
    return this.every((extension) => extension.unload?.(room));
  }

  /** Every extension's `close` at once; failures are logged. */
  async close(): Promise<void> {
    await Promise.all(this.list.map((e) => this.safely(e, 'close', () => e.close?.())));
  }

  /** Every extension's `destroy`, in order, all of them; rejects with the first failure. */
  destroy(): Promise<void> {
    return this.every((extension) => extension.destroy?.());
  }

  private async every(run: (extension: Extension) => unknown): Promise<void> {
    let failure: unknown = null;
    for (const extension of this.list) {
      try {
        await run(extension);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure) throw failure;
  }

  // A hook that observes must not break the room or the extensions after it.
  private guard(extension: Extension, hook: string, planId: string, run: () => void): void {
    try {
      run();
    } catch (error) {
      this.metrics.errorsTotal.inc({ kind: `extension_${hook}` });
      this.logger.error(`extension ${extension.name} failed in ${hook}`, {
        plan: planId,
        error: describeError(error),
      });
    }
  }

  private async safely(extension: Extension, hook: string, run: () => unknown): Promise<void> {
    try {
      await run();
    } catch (error) {
      this.metrics.errorsTotal.inc({ kind: `extension_${hook}` });
      this.logger.error(`extension ${extension.name} failed in ${hook}`, { error: describeError(error) });
    }
  }
}
