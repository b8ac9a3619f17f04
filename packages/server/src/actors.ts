// Who a connection or a token's subject may speak for: the actors of a subject, the agents it runs, and the actors
// an awareness state names. The claim arbiter and the HTTP API decide with these.
import { actorFor } from '@cairn/core/protocol';

/** The actors a token's subject is: `agent:<sub>` and `user:<sub>`, or the sub when it names an actor itself. */
export function actorsOfSubject(sub: string): string[] {
  const agent = actorFor(sub, 'agent');
  return agent === sub ? [sub] : [agent, actorFor(sub, 'user')];
}

/** Whether a token's subject may act as `actor`: one of its own actors, or an agent it runs (`agent:<sub>/<name>`). */
export function mayActAs(sub: string, actor: string): boolean {
  const own = actorsOfSubject(sub);
  if (own.includes(actor)) return true;
  return own.some((a) => a.startsWith('agent:') && actor.startsWith(`${a}/`) && actor.length > a.length + 1);
}

/** Actors an awareness state says it is: `presence.id` (the websocket adapter) or `cairn.actor` (the renderer). */
export function statedActors(state: Record<string, unknown>): string[] {
  const out: string[] = [];
  const presence = state['presence'] as { id?: unknown } | undefined;
  const cairn = state['cairn'] as { actor?: unknown } | undefined;
  if (typeof presence?.id === 'string') out.push(presence.id);
  if (typeof cairn?.actor === 'string') out.push(cairn.actor);
  return out;
}
