// Who may open the documents learning keeps beside plans, over WebSocket and HTTP alike: a plan's trace document
// (`<planId>#traces`) exactly as the plan itself; a scope's skills (`<scope>#skills`) read-only, for any token
// that covers a plan of the scope. Skills change only through the server (the sweep, the HTTP API).
import { CairnError } from '@cairn/core';
import { planOfTraceDoc, scopeOfSkillsDoc } from '@cairn/core/learning';
import type { Authenticator } from '../../auth.js';

/** The authenticator with the rules of trace and skills documents in front of `auth`'s own. */
export function withLearningAccess(auth: Authenticator): Authenticator {
  return {
    get open() {
      return auth.open;
    },
    async authorize(token, docId, needs = 'read') {
      const plan = planOfTraceDoc(docId);
      if (plan !== null) return { ...(await auth.authorize(token, plan, needs)), planId: docId };
      const scope = scopeOfSkillsDoc(docId);
      if (scope !== null) {
        const grant = await auth.authorizeScope(token, scope, 'read');
        if (needs !== 'read') {
          throw new CairnError(
            'forbidden',
            `The skills of scope "${scope}" are read-only here; retire or restore one with ` +
              `PATCH /api/scopes/${encodeURIComponent(scope)}/skills/<skillId>.`,
          );
        }
        return { ...grant, planId: docId, role: 'read' };
      }
      return auth.authorize(token, docId, needs);
    },
    authorizeScope: (token, scope, needs) => auth.authorizeScope(token, scope, needs),
  };
}
