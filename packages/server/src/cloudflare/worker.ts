// The Worker in front of the plan objects: refuses to serve without a secret (unless local development opts in),
// sends `/sync/:plan` upgrades and `/api/plans/:plan/...` requests to the plan's object by name, and the rest to
// the static assets (the demo) when the worker has them.
import { CairnError } from '@cairn/core';
import { errorResponse, jsonResponse } from '../http/app.js';
import { SYNC_PATH_PREFIX } from '../wire.js';
import { assertConfigured, type CairnWorkerEnv, PLAN_HEADER } from './env.js';

const API_PLAN = /^\/api\/plans\/([^/]+)(?:\/|$)/;

/** The object name of a request's document, or null when no plan object answers the path. */
export function planOfPath(pathname: string): string | null {
  const encoded = pathname.startsWith(SYNC_PATH_PREFIX)
    ? pathname.slice(SYNC_PATH_PREFIX.length)
    : API_PLAN.exec(pathname)?.[1];
  if (encoded === undefined) return null;
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new CairnError('invalid_argument', 'The plan id in the path is not valid percent-encoding.', {
      field: 'planId',
    });
  }
}

/** The Worker's fetch handler: `export default cairnWorker` (or call it from your own). */
export const cairnWorker = {
  async fetch(request: Request, env: CairnWorkerEnv): Promise<Response> {
    const url = new URL(request.url);
    try {
      if (url.pathname === '/healthz') return jsonResponse({ ok: true, host: 'cloudflare' }, 200);
      const planId = planOfPath(url.pathname);
      if (planId === null) {
        if (env.ASSETS) return env.ASSETS.fetch(request);
        throw new CairnError(
          'not_found',
          'Cairn answers /sync/<planId> (WebSocket) and /api/plans/<planId>/...',
        );
      }
      assertConfigured(env);
      const forwarded = new Request(request);
      forwarded.headers.set(PLAN_HEADER, planId);
      return await env.CAIRN_PLANS.get(env.CAIRN_PLANS.idFromName(planId)).fetch(forwarded);
    } catch (error) {
      return errorResponse(error);
    }
  },
};
