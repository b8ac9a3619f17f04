// The Worker in front of the objects: the server-wide routes of `cairn serve` with the same answers (`/healthz`,
// `/metrics` of one object, the model proxy, the JSON 404, the demo), and every document's routes sent to the object
// of that document by name: `/sync/:doc` and `/api/plans/:plan/...` to the plan's (or trace's) object,
// `/api/scopes/:scope/...` to the scope's skills object. Refuses to serve without a secret unless local
// development opts in. Design: docs/decisions/041-durable-object-host.md, 049-server-routes-and-learning-at-the-edge.md.
import { CairnError } from '@cairn/core';
import { assertPlanDocId, skillsDocId } from '@cairn/core/learning';
import type { Context, Hono } from 'hono';
import { createHttpApp, decodeSegment, jsonResponse, notFound } from '../http/app.js';
import { HttpRateLimiter } from '../http/rate-limit.js';
import { requestToken } from '../http/routes.js';
import { modelProxyFromEnv, registerModelRoutes, writersOnly } from '../model-proxy.js';
import { SYNC_PATH_PREFIX } from '../wire.js';
import {
  ADDRESS_HEADER,
  assertConfigured,
  authenticatorFromEnv,
  type CairnWorkerEnv,
  PLAN_HEADER,
  stringVars,
} from './env.js';

const API_PLAN = /^\/api\/plans\/([^/]+)(?:\/|$)/;
const API_SCOPE = /^\/api\/scopes\/([^/]+)(?:\/|$)/;

/**
 * The object name of a request's document, or null when no object answers the path: the plan (or trace document)
 * of `/sync/:doc` and `/api/plans/:plan/...`, the scope's skills document (`<scope>#skills`) of
 * `/api/scopes/:scope/...`. Throws a 400 for a segment that is not valid percent-encoding.
 */
export function planOfPath(pathname: string): string | null {
  if (pathname.startsWith(SYNC_PATH_PREFIX)) {
    return decodeSegment(pathname.slice(SYNC_PATH_PREFIX.length), 'planId');
  }
  const plan = API_PLAN.exec(pathname)?.[1];
  if (plan !== undefined) return decodeSegment(plan, 'plan');
  const scope = API_SCOPE.exec(pathname)?.[1];
  if (scope !== undefined) return skillsDocId(decodeSegment(scope, 'scope'));
  return null;
}

/** The Worker's fetch handler: `export default cairnWorker` (or call it from your own). */
export const cairnWorker = {
  fetch(request: Request, env: CairnWorkerEnv): Promise<Response> {
    return Promise.resolve(workerApp(env).fetch(request, env));
  },
};

/**
 * The Worker's own `/api/` routes (the model proxy) are limited per token as on `cairn serve`, counted in each
 * Worker isolate (a plan's routes are limited in its object). Built in the first request, never at load: Workers
 * run no code of ours at the module's top level.
 */
let workerLimiter: HttpRateLimiter | null = null;
/** One app per environment object (the same for every request of an isolate). */
const apps = new WeakMap<CairnWorkerEnv, Hono>();

function workerApp(env: CairnWorkerEnv): Hono {
  let app = apps.get(env);
  if (app) return app;
  const assets = env.ASSETS;
  app = createHttpApp(assets ? { fallback: (c) => assets.fetch(c.req.raw) } : {});
  app.use('/api/*', async (c, next) => {
    if (planOfPath(pathOf(c)) === null) {
      assertConfigured(env);
      workerLimiter ??= new HttpRateLimiter();
      workerLimiter.checkRequest(c.req.raw, c.req.header(ADDRESS_HEADER) ?? null);
    }
    await next();
  });
  // Each object keeps its own rooms and connections; the Worker answers for itself.
  app.get('/healthz', () => {
    assertConfigured(env);
    return jsonResponse({ ok: true, host: 'cloudflare' });
  });
  app.get('/metrics', (c) => {
    const plan = c.req.query('plan');
    if (!plan) {
      throw new CairnError(
        'invalid_argument',
        'At the edge every plan is a Durable Object with metrics of its own: ask GET /metrics?plan=<planId> ' +
          '(a trace or skills document by its id, e.g. acme%23skills).',
        { field: 'plan' },
      );
    }
    return toObject(env, plan, c.req.raw);
  });
  registerModelRoutes(app, {
    ...modelProxyFromEnv(stringVars(env)),
    // As `authorizeRequest` on `cairn serve`, without a hub: the Worker holds no plan.
    authorize: (request) => {
      const auth = authenticatorFromEnv(env);
      return writersOnly(auth.open, async (_, plan) => {
        await auth.authorize(requestToken({ auth }, request), plan, 'write');
        assertPlanDocId(plan);
      })(request);
    },
  });
  // Every other method and path of a document goes to its object, which answers as `cairn serve` does (405 and 404
  // included).
  const forward = (c: Context) => {
    const docId = planOfPath(pathOf(c));
    if (docId === null) throw notFound(pathOf(c));
    return toObject(env, docId, c.req.raw);
  };
  app.all(`${SYNC_PATH_PREFIX}*`, forward);
  app.all('/api/plans/*', forward);
  app.all('/api/scopes/*', forward);
  apps.set(env, app);
  return app;
}

/** `request` as the object of document `docId` answers it. */
function toObject(env: CairnWorkerEnv, docId: string, request: Request): Promise<Response> {
  assertConfigured(env);
  const forwarded = new Request(request);
  forwarded.headers.set(PLAN_HEADER, docId);
  return env.CAIRN_PLANS.get(env.CAIRN_PLANS.idFromName(docId)).fetch(forwarded);
}

/** The path as the client sent it, still percent-encoded (Hono's `c.req.path` is decoded). */
function pathOf(c: Context): string {
  return new URL(c.req.url).pathname;
}
