// Who is here, from awareness (never the document): each tab publishes its person under `presence` and its
// in-page agent under `agent`, both `{ id, name, kind, activeTask? }`. The bar lists everyone and what they
// are on; the list highlights the task each one is on.
import type { Awareness } from 'y-protocols/awareness';
import { colorFor, h } from '../dom.js';
import type { PresenceTag } from './context.js';

export interface Participant extends PresenceTag {
  activeTask: string | null;
  self: boolean;
}

interface PresenceState {
  id?: unknown;
  name?: unknown;
  kind?: unknown;
  activeTask?: unknown;
}

/** Everyone in the awareness states, people first, one entry per actor (a person with two tabs shows once). */
export function participants(awareness: Awareness): Participant[] {
  const byId = new Map<string, Participant>();
  for (const [clientId, state] of awareness.getStates()) {
    const self = clientId === awareness.clientID;
    for (const field of ['presence', 'agent'] as const) {
      const p = (state as Record<string, PresenceState | undefined>)[field];
      if (!p || typeof p.id !== 'string' || typeof p.name !== 'string') continue;
      const activeTask = typeof p.activeTask === 'string' ? p.activeTask : null;
      const known = byId.get(p.id);
      if (known) {
        known.activeTask ??= activeTask;
        known.self ||= self;
        continue;
      }
      byId.set(p.id, {
        id: p.id,
        name: p.name.slice(0, 60),
        kind: p.kind === 'agent' ? 'agent' : 'human',
        color: colorFor(p.id),
        activeTask,
        self,
      });
    }
  }
  return [...byId.values()].sort(
    (a, b) =>
      Number(b.self) - Number(a.self) ||
      (a.kind === b.kind ? a.name.localeCompare(b.name) : a.kind === 'human' ? -1 : 1),
  );
}

export class PresenceBar {
  readonly el: HTMLElement;
  private readonly list: HTMLUListElement;

  constructor(private readonly titleOf: (id: string) => string | undefined) {
    this.list = h('ul', { className: 'presence-list' });
    this.el = h(
      'section',
      { className: 'presence', attrs: { 'aria-label': 'Who is here' } },
      h('span', { className: 'presence-label', text: 'Here:' }),
      this.list,
    );
  }

  render(people: Participant[], selfHuman: string): void {
    this.list.replaceChildren(
      ...people.map((p) => {
        const on = p.activeTask ? this.titleOf(p.activeTask) : undefined;
        const dot = h('span', { className: 'dot', attrs: { 'aria-hidden': 'true' } });
        dot.style.background = p.color;
        return h(
          'li',
          { className: `person person-${p.kind}`, dataset: { actor: p.id } },
          dot,
          h('span', {
            className: 'person-name',
            text: `${p.name}${p.id === selfHuman ? ' (you)' : ''}`,
          }),
          p.kind === 'agent' ? h('span', { className: 'pill pill-agent', text: 'agent' }) : null,
          on ? h('span', { className: 'person-task', text: `on “${on}”` }) : null,
        );
      }),
    );
  }
}

/** The tags per task for the list: who is on which task (not this person: their own focus is visible already). */
export function tagsByTask(people: Participant[], selfHuman: string): Map<string, PresenceTag[]> {
  const out = new Map<string, PresenceTag[]>();
  for (const p of people) {
    if (!p.activeTask || p.id === selfHuman) continue;
    const list = out.get(p.activeTask) ?? [];
    list.push({ id: p.id, name: p.name, kind: p.kind, color: p.color });
    out.set(p.activeTask, list);
  }
  return out;
}
