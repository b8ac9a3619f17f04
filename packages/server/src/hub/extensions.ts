// Runs the hub's extensions' hooks in priority order, and decides what a failing hook means: a refusal
// (authenticate), a failed load, a failed flush, or a logged error that leaves the room and the others alone.
import { CairnError } from '@cairn/core';
import * as decoding from 'lib0/decoding';
import { describeError, type Logger } from '../log.js';
import type { AuthRequest, Extension, LoadingRoom, PlanRoom, RoomChange, RoomMessage } from './extension.js';
import type { HubMetrics } from './metrics.js';

const DEFAULT_PRIORITY = 100;
const priority = (extension: Extension) => extension.priority ?? DEFAULT_PRIORITY;

export class Extensions {
  private list: Extension[] = [];
  /** Those with a `change` hook: it runs on every update, so the others are left out once, here. */
  private changers: Extension[] = [];
  private readonly byMessage = new Map<number, Extension[]>();

  constructor(
    private readonly logger: Logger,
    private readonly metrics: HubMetrics,
  ) {}

  get all(): readonly Extension[] {
    return this.list;
  }

  /** Adds one; among equal priorities, in the order added. Throws if it routes a reserved sub-type (0 to 2). */
  add(extension: Extension): void {
    for (const subType of extension.cairnMessages ?? []) {
      if (subType <= 2) {
        throw new CairnError('invalid_argument', `Cairn message sub-type ${subType} is reserved.`, {
          subType,
        });
      }
    }
    this.list = [...this.list, extension].sort((a, b) => priority(b) - priority(a));
    this.changers = this.list.filter((e) => e.change);
    for (const subType of extension.cairnMessages ?? []) {
      this.byMessage.set(
        subType,
        this.list.filter((e) => e.cairnMessages?.includes(subType)),
      );
    }
  }

  /**
   * What answers a Cairn sub-type: its extensions in order until one does not pass. Undefined when none routes
   * it; throws when every one passed.
   */
  forMessage(subType: number): ((message: RoomMessage) => void) | undefined {
    const extensions = this.byMessage.get(subType);
    if (!extensions) return undefined;
    return (message) => {
      const body = message.decoder.arr.subarray(message.decoder.pos);
      for (const extension of extensions) {
        const verdict = extension.message?.({ ...message, decoder: decoding.createDecoder(body) });
        if (verdict !== 'pass') return;
      }
      throw new CairnError('invalid_argument', `no extension answered Cairn message type ${subType}`);
    };
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
    for (const extension of this.changers) {
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
