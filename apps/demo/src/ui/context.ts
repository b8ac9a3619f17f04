// What the views share: the person's Plan, display names for actors, and one way to run an edit and report a
// refusal (a CairnError's message says what is valid) without a view knowing about the toast.
import { isCairnError, type Plan } from '@cairn/core';

export interface PresenceTag {
  /** The actor, e.g. `user:ab12cd` or `agent:planner-ab12cd`. */
  id: string;
  name: string;
  kind: 'agent' | 'human';
  color: string;
}

export interface UiContext {
  plan: Plan;
  nameOf(actor: string): string;
  notify(message: string, action?: { label: string; run: () => void }): void;
  /** Runs an edit; a refusal becomes a notice and changes nothing. Returns whether it succeeded. */
  attempt(fn: () => unknown): boolean;
  /** Says which task this person is on (focus), for presence. */
  focusTask(id: string | null): void;
}

export function createAttempt(notify: UiContext['notify']): UiContext['attempt'] {
  return (fn) => {
    try {
      const result = fn();
      if (result instanceof Promise) {
        result.catch((error: unknown) => notify(messageOf(error)));
      }
      return true;
    } catch (error) {
      notify(messageOf(error));
      return false;
    }
  };
}

export function messageOf(error: unknown): string {
  if (isCairnError(error)) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export const STATUS_LABELS: Record<string, string> = {
  pending: 'to do',
  in_progress: 'in progress',
  waiting_user: 'waiting on a person',
  waiting_external: 'waiting',
  done: 'done',
  failed: 'failed',
  cancelled: 'cancelled',
  skipped: 'skipped',
};

/** "in 2 h", "5 min ago": wake times in words, with the exact time in the tooltip. */
export function relativeTime(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const minutes = Math.round((at - now) / 60_000);
  const abs = Math.abs(minutes);
  const amount =
    abs < 1
      ? 'now'
      : abs < 60
        ? `${abs} min`
        : abs < 48 * 60
          ? `${Math.round(abs / 60)} h`
          : `${Math.round(abs / 1440)} d`;
  if (amount === 'now') return 'now';
  return minutes > 0 ? `in ${amount}` : `${amount} ago`;
}
