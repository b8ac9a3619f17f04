// The toolkit over a server's HTTP API, for agents that cannot hold a Yjs document (a serverless function, a
// process that lives for one request): calls go to `POST /api/plans/:plan/tools/:name` as the agent's actor, and
// the plan context comes from `GET /api/plans/:plan/context`, whole once and then as deltas since a cursor
// (decision 021), under the same re-render rule as createContextFeed. Definitions do not depend on the plan's
// content, so they are made here, exactly as the server and a local toolkit make them.
import { CairnError, type ErrorCode } from '../errors.js';
import { createPlan } from '../plan.js';
import type { ContextTurn } from '../render/context-feed.js';
import type { RenderFormat } from '../render/render-plan.js';
import { defaultTokenizer, type Tokenizer } from '../render/tokenizer.js';
import { type Actor, ActorSchema } from '../schema.js';
import { createToolkit } from '../tools/families.js';
import type { FamilyName } from '../tools/tool.js';
import type { ToolResult } from '../tools/toolkit.js';
import { parseOrThrow } from '../validate.js';
import type { AgentToolkit, ContextSource } from './session.js';

/** Where the server is, which plan, and who writes: the options of `createHttpToolkit`. */
export interface HttpToolkitOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The plan's id. */
  plan: string;
  /** Who every write is attributed to: `agent:<name>` (the server checks the token may act as it). */
  actor: Actor;
  /** The families offered. Default `['cairn']`. */
  families?: readonly FamilyName[];
  /** A bearer token, for a server that is not open. */
  token?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** As createContextFeed's: re-render the plan once deltas cost more than this share of it. Default 3. */
  reRenderShare?: number;
  tokenizer?: Tokenizer;
}

/** The toolkit and context of `createHttpToolkit`: the same tools and turns as a local plan's, over HTTP. */
export type HttpToolkit = AgentToolkit & ContextSource;

/**
 * The toolkit of a plan that lives on a `cairn serve` server, over HTTP only (no Yjs, no WebSocket): for an
 * agent that does not hold the document. Its tools, results and errors are those of `createToolkit`.
 */
export function createHttpToolkit(options: HttpToolkitOptions): HttpToolkit {
  const actor = parseOrThrow(ActorSchema, options.actor, 'HTTP toolkit actor');
  const families = [...(options.families ?? ['cairn'])];
  // Never written: it only gives the families' names and definitions (and refuses an unknown family).
  const local = createToolkit(createPlan({ actor }), { actor, families });
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const base = `${options.url.replace(/\/+$/, '')}/api/plans/${encodeURIComponent(options.plan)}`;
  const headers = (extra: Record<string, string>): Record<string, string> =>
    options.token ? { ...extra, authorization: `Bearer ${options.token}` } : extra;

  const unreachable = (what: string, error: unknown) =>
    new CairnError(
      'internal',
      `The Cairn server at ${options.url} did not answer ${what} (${error instanceof Error ? error.message : String(error)}). ` +
        'Whether a write landed is unknown: read the plan before trying again.',
    );

  return {
    actor,
    families,
    names: local.names,
    definitions: (format, definitionOptions) => local.definitions(format, definitionOptions),
    async dispatch(name: string, args?: unknown): Promise<ToolResult> {
      const query = new URLSearchParams({ families: families.join(','), as: actor });
      const body = typeof args === 'string' ? args : JSON.stringify(args ?? {});
      try {
        const response = await doFetch(`${base}/tools/${encodeURIComponent(name)}?${query}`, {
          method: 'POST',
          headers: headers({ 'content-type': 'application/json', accept: 'application/json' }),
          body,
        });
        const text = await response.text();
        const parsed: unknown = text === '' ? null : JSON.parse(text);
        // A refusal is `{ error }` with a 4xx status: the model reads it as it would a local toolkit's.
        if (response.ok || (typeof parsed === 'object' && parsed !== null && 'error' in parsed))
          return parsed;
        throw new Error(`status ${response.status}`);
      } catch (error) {
        return { error: unreachable(`the call ${name}`, error).toJSON() };
      }
    },
    contextFeed({ format }: { format: RenderFormat }) {
      const tokenizer = options.tokenizer ?? defaultTokenizer;
      const share = options.reRenderShare ?? 3;
      let full: string | null = null;
      let fullTokens = 0;
      let toldTokens = 0;
      let cursor: string | null = null;
      const read = async (since: string | null) => {
        const query = new URLSearchParams({ format, as: actor, ...(since ? { since } : {}) });
        const response = await doFetch(`${base}/context?${query}`, {
          headers: headers({ accept: 'application/json' }),
        }).catch((error: unknown) => {
          throw unreachable('a read of the plan', error);
        });
        const body = (await response.json()) as {
          kind?: string;
          text?: string;
          cursor?: string;
          error?: unknown;
        };
        if (!response.ok || typeof body.text !== 'string' || typeof body.cursor !== 'string') {
          const refusal = body.error as { code?: ErrorCode; message?: string } | undefined;
          throw refusal?.code && refusal.message
            ? new CairnError(refusal.code, refusal.message)
            : unreachable('a read of the plan', new Error(`status ${response.status}`));
        }
        return body as { kind: string; text: string; cursor: string };
      };
      const render = async (): Promise<ContextTurn> => {
        const answer = await read(null);
        full = answer.text;
        fullTokens = tokenizer.count(full);
        toldTokens = 0;
        cursor = answer.cursor;
        return { plan: full, delta: '', reRendered: true };
      };
      return {
        async turn() {
          if (full === null || cursor === null) return render();
          const answer = await read(cursor);
          // A cursor the server cannot place (another copy of the plan) gets the whole plan: start again from it.
          if (answer.kind !== 'delta') return render();
          if (answer.text === '') return { plan: full, delta: '', reRendered: false };
          const cost = tokenizer.count(answer.text);
          if (toldTokens + cost > share * fullTokens) return render();
          toldTokens += cost;
          cursor = answer.cursor;
          return { plan: full, delta: answer.text, reRendered: false };
        },
      };
    },
  };
}
