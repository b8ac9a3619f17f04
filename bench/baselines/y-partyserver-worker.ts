// y-partyserver 2.2 as its README deploys it: a YServer Durable Object per room behind routePartykitRequest, in
// memory (no onLoad / onSave), for benchmark 16. It runs in the npm workerd through the example app's harness
// (apps/cloudflare/test/workerd.ts), bundled like the example worker; /healthz answers the harness's readiness probe.
import { routePartykitRequest } from 'partyserver';
import { YServer } from 'y-partyserver';

export class YPlans extends YServer {}

export default {
  async fetch(request: Request, env: Record<string, unknown>): Promise<Response> {
    if (new URL(request.url).pathname === '/healthz') return new Response('okay');
    return (await routePartykitRequest(request, env)) ?? new Response('Not found', { status: 404 });
  },
};
