// A cache-friendly plan context for an agent loop. Model providers cache a prompt's stable prefix, so the plan
// text in the system prompt stays byte-identical from turn to turn, and what others changed since the previous
// turn comes as a short message of its own (renderDelta). The whole plan is rendered again only when the changes
// told since the last full render would cost more than a share of it: then one fresh prefix is cheaper than
// dragging the deltas along. Ages in the plan text are as of its last full render.

import * as Y from 'yjs';
import type { Plan } from '../plan.js';
import type { Actor } from '../schema.js';
import { renderDelta } from './delta.js';
import { type RenderOptions, renderPlan } from './render-plan.js';
import { defaultTokenizer, type Tokenizer } from './tokenizer.js';

/** The reader, format and budget of a context feed: `renderPlan`'s options and when to re-render. */
export interface ContextFeedOptions extends Omit<RenderOptions, 'actor'> {
  /** Who reads it: their own changes are not told back to them. Default: the plan's actor. */
  actor?: Actor;
  /**
   * Render the whole plan again once the deltas since the last full render cost more than this share of its
   * tokens. Default 3: a fresh prefix is paid for by the plan and by every message after it, which the
   * provider's cache then misses too, so carrying deltas stays cheaper well past the plan's own size.
   */
  reRenderShare?: number;
  /**
   * Tell the reader's own changes too. Default false: an agent knows them from its tool results. An agent whose
   * history is trimmed (or that is told the plan rather than its own results) needs them to keep the plan whole.
   */
  includeOwn?: boolean;
  /** Counts tokens for that rule (and the render budget). Default: the estimate of `defaultTokenizer`. */
  tokenizer?: Tokenizer;
}

/** The context of one model call: the plan for the system prompt, and what changed since the previous turn. */
export interface ContextTurn {
  /** The plan for the system prompt: the same bytes as the turn before unless `reRendered`. */
  plan: string;
  /**
   * What others changed since the previous turn (and the reader too, with `includeOwn`), as a message to append;
   * '' when nothing did (or on a re-render).
   */
  delta: string;
  /** True when `plan` was rendered now (the first turn, or the deltas grew too costly). */
  reRendered: boolean;
}

/** A plan's context turn by turn, for one reader (`createContextFeed`). */
export interface ContextFeed {
  /** The context for the next model call. */
  turn(): ContextTurn;
}

/**
 * A feed of context for an agent's loop: the plan rendered once for a system prompt that stays byte-identical
 * (and so cached), then only what others changed each turn, re-rendered when those deltas grow too costly.
 */
export function createContextFeed(plan: Plan, options: ContextFeedOptions): ContextFeed {
  const actor = options.actor ?? plan.actor;
  const tokenizer = options.tokenizer ?? defaultTokenizer;
  const share = options.reRenderShare ?? 3;
  let full: string | null = null;
  let fullTokens = 0;
  let toldTokens = 0;
  let point = Y.encodeStateVector(plan.doc);
  const render = (): ContextTurn => {
    full = renderPlan(plan, { ...options, actor });
    fullTokens = tokenizer.count(full);
    toldTokens = 0;
    point = Y.encodeStateVector(plan.doc);
    return { plan: full, delta: '', reRendered: true };
  };
  return {
    turn() {
      if (full === null) return render();
      const delta = renderDelta(plan, {
        since: point,
        ...(options.includeOwn ? {} : { exclude: actor }),
        ids: options.format === 'native' ? (options.numbers ? 'both' : 'id') : 'num',
        ...(options.nameOf ? { nameOf: options.nameOf } : {}),
      });
      if (delta === '') return { plan: full, delta, reRendered: false };
      const cost = tokenizer.count(delta);
      if (toldTokens + cost > share * fullTokens) return render();
      toldTokens += cost;
      point = Y.encodeStateVector(plan.doc);
      return { plan: full, delta, reRendered: false };
    },
  };
}
