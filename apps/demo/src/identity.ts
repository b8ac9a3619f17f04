// Who is using this browser: a random id and a display name kept in localStorage, the actor strings the plan
// and the in-page agent write as, and the plan id from the URL (a new plan gets one and a shareable link).

export interface Identity {
  /** Short and random; part of the actor string. */
  id: string;
  name: string;
}

const KEY = 'cairn.identity';
const NAMES = ['Otter', 'Heron', 'Lynx', 'Marten', 'Ibis', 'Puffin', 'Stoat', 'Wren', 'Vole', 'Kestrel'];
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export function randomId(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = '';
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length];
  return out;
}

export function loadIdentity(storage: Storage = localStorage): Identity {
  try {
    const stored = JSON.parse(storage.getItem(KEY) ?? 'null') as Partial<Identity> | null;
    if (stored && typeof stored.id === 'string' && /^[0-9a-z]{4,16}$/.test(stored.id)) {
      return { id: stored.id, name: typeof stored.name === 'string' && stored.name ? stored.name : 'Guest' };
    }
  } catch {
    // A corrupt entry: start over with a new identity.
  }
  const id = randomId(6);
  const name = `${NAMES[Number.parseInt(id.slice(0, 2), 36) % NAMES.length]} ${id.slice(0, 2)}`;
  const identity = { id, name };
  saveIdentity(identity, storage);
  return identity;
}

export function saveIdentity(identity: Identity, storage: Storage = localStorage): void {
  storage.setItem(KEY, JSON.stringify(identity));
}

export const userActor = (identity: Identity): string => `user:${identity.id}`;
export const agentActor = (identity: Identity): string => `agent:planner-${identity.id}`;

/** Plan ids the demo accepts from a URL: what a person can share and type. */
export const PLAN_ID_PATTERN = /^[\w.:-]{1,128}$/;

export type PlanIdResult = { ok: true; planId: string; created: boolean } | { ok: false; given: string };

/** The plan named by `?plan=`, or a new id written into the URL (replaceState) so the link can be shared. */
export function planIdFromLocation(location: Location, history: History): PlanIdResult {
  const url = new URL(location.href);
  const given = url.searchParams.get('plan');
  if (given !== null)
    return PLAN_ID_PATTERN.test(given) ? { ok: true, planId: given, created: false } : { ok: false, given };
  const planId = `plan-${randomId(10)}`;
  url.searchParams.set('plan', planId);
  history.replaceState(null, '', url);
  return { ok: true, planId, created: true };
}

/** A token for a server that requires one, from `#token=` (fragments never reach the server's logs). */
export function tokenFromLocation(location: Location): string | undefined {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  return token ?? undefined;
}
