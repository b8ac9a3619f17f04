// The server's own HTTP endpoints: health and metrics. The plan API (tasks, context, tools) registers beside
// them on the same app, authorizing each request with `authorizeRequest`.

import { CairnError } from '@cairn/core';
import { assertPlanDocId } from '@cairn/core/learning';
import type { Hono } from 'hono';
import type { Grant, Role } from '../auth.js';
import type { SyncHub } from '../hub/hub.js';
import { bearerToken, jsonResponse, textResponse } from './app.js';

/** A service the server depends on (Redis, PostgreSQL): `/healthz` reports it by name. */
export interface ServiceCheck {
  readonly name: string;
  /** Resolves when the service answers; rejects with an error naming it. */
  check(): Promise<void>;
}

const SERVICE_CHECK_MS = 2000;

async function checkService(service: ServiceCheck): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${SERVICE_CHECK_MS} ms`)), SERVICE_CHECK_MS);
  });
  try {
    await Promise.race([service.check(), timeout]);
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    clearTimeout(timer);
  }
}

export function registerCoreRoutes(app: Hono, hub: SyncHub, services: readonly ServiceCheck[] = []): void {
  app.get('/healthz', async () => {
    const closing = hub.isClosing;
    const states = await Promise.all(services.map(checkService));
    const down = states.some((state) => state !== 'ok');
    return jsonResponse(
      {
        ok: !closing && !down,
        ...(services.length > 0
          ? { services: Object.fromEntries(services.map((s, i) => [s.name, states[i]])) }
          : {}),
        rooms: hub.roomCount,
        connections: hub.connectionCount,
        // A count only: this route needs no token, and plan ids and paths are for the operator's log. Still 200:
        // every other plan is served; these wait for `cairn log repair`.
        damagedLogs: hub.store.damagedLogs?.().length ?? 0,
      },
      closing || down ? 503 : 200,
    );
  });
  app.get('/metrics', async () =>
    textResponse(await hub.registry.render(), 200, { 'content-type': hub.registry.contentType }),
  );
}

/**
 * The request's bearer token, or null in open mode; without one when auth is on, a CairnError `unauthorized`
 * saying how HTTP takes it (the authenticator's own words name the WebSocket's ways, ?token= and a subprotocol,
 * which HTTP ignores).
 */
export function requestToken(hub: Pick<SyncHub, 'auth'>, request: Request): string | null {
  const authorization = request.headers.get('authorization');
  const token = bearerToken(authorization);
  if (!token && !hub.auth.open) {
    throw new CairnError(
      'unauthorized',
      authorization
        ? 'The Authorization header is not "Bearer <jwt>".'
        : 'No token: send it as the header Authorization: Bearer <jwt>.',
    );
  }
  return token;
}

/**
 * The grant of an HTTP request on `planId` (token from `Authorization: Bearer`), or a thrown CairnError that
 * the app answers with 401 / 403 / 400.
 */
export async function authorizeRequest(
  hub: SyncHub,
  request: Request,
  planId: string,
  needs: Role,
): Promise<Grant> {
  hub.validatePlanId(planId);
  const grant = await hub.grant(planId, requestToken(hub, request), needs);
  // The authenticator lets a plan's token reach its trace document; the plan routes take plans only. Asked after
  // the token, so a stranger is refused as for any plan of others.
  assertPlanDocId(planId);
  return grant;
}
