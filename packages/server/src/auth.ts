// Who may open which plan: HS256 JWTs (via jose) whose claims name a plan (an id or a glob like `acme:*`),
// a role (read < write < admin) and a subject. Without a secret the server is open (see the host's loopback rule).
import { CairnError } from '@cairn/core';
import { errors, jwtVerify, SignJWT } from 'jose';
import * as z from 'zod';

export const ROLES = ['read', 'write', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** What a verified token (or open mode) grants on one plan. */
export interface Grant {
  planId: string;
  role: Role;
  /** The token's subject; `anonymous` in open mode or when the token has none. */
  sub: string;
  /** The plan claim the grant came from (an id or a pattern). */
  pattern: string;
  /** When the grant ends, in ms since the epoch (the token's `exp` plus the tolerance); null in open mode. */
  expiresAt: number | null;
}

export interface TokenClaims {
  plan: string;
  role: Role;
  sub?: string;
}

export interface Authenticator {
  /** True when no secret is configured: every request is granted `admin` on every plan. */
  readonly open: boolean;
  /**
   * Grants access to `planId` or throws CairnError `unauthorized` (no token, bad signature, expired, malformed)
   * or `forbidden` (a valid token for other plans, or a role below `needs`).
   */
  authorize(token: string | null | undefined, planId: string, needs?: Role): Promise<Grant>;
  /**
   * Grants access to what a whole scope shares (its learned skills) when the token's plan claim covers some plan
   * of the scope (`scopeCovered`); the grant's `planId` is the scope. Throws like `authorize`.
   */
  authorizeScope(token: string | null | undefined, scope: string, needs?: Role): Promise<Grant>;
}

/**
 * Seconds a token is still accepted after its `exp` (clocks of the issuer and the server differ): the same on
 * HTTP, on the WebSocket upgrade and for the connection's own expiry.
 */
export const EXPIRY_TOLERANCE_SECONDS = 5;

/** Shortest secret accepted: HS256 wants at least 256 bits of key. */
export const MIN_SECRET_BYTES = 32;

/** Bounds of a token's plan claim, checked when a token is signed and when one is read. */
export const PLAN_PATTERN_LIMITS = { maxLength: 256, maxStars: 8 } as const;
const PATTERN_RULE = `at most ${PLAN_PATTERN_LIMITS.maxLength} characters with at most ${PLAN_PATTERN_LIMITS.maxStars} "*"`;

const PlanPatternSchema = z
  .string()
  .min(1)
  .max(PLAN_PATTERN_LIMITS.maxLength)
  .refine((plan) => plan.split('*').length - 1 <= PLAN_PATTERN_LIMITS.maxStars);

const ClaimsSchema = z.object({
  plan: PlanPatternSchema,
  role: z.enum(ROLES),
  sub: z.string().min(1).optional(),
});

export function secretKey(secret: string | Uint8Array): Uint8Array {
  const bytes = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw new CairnError(
      'invalid_argument',
      `The secret is ${bytes.byteLength} bytes; it must be at least ${MIN_SECRET_BYTES} ` +
        '(e.g. the output of `openssl rand -base64 32`).',
      { field: 'secret', min: MIN_SECRET_BYTES },
    );
  }
  return bytes;
}

export function createAuthenticator(options: { secret?: string | Uint8Array | null } = {}): Authenticator {
  if (options.secret == null) {
    return {
      open: true,
      async authorize(_token, planId) {
        return { planId, role: 'admin', sub: 'anonymous', pattern: '*', expiresAt: null };
      },
      async authorizeScope(_token, scope) {
        return { planId: scope, role: 'admin', sub: 'anonymous', pattern: '*', expiresAt: null };
      },
    };
  }
  const key = secretKey(options.secret);
  const verified = async (
    token: string | null | undefined,
    covers: (plan: string) => boolean,
    what: string,
    planId: string,
    needs: Role,
  ): Promise<Grant> => {
    if (!token) {
      throw new CairnError(
        'unauthorized',
        'No token: pass one as ?token=<jwt> or the subprotocol cairn.token.<jwt>.',
      );
    }
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: ['HS256'],
        clockTolerance: EXPIRY_TOLERANCE_SECONDS,
        // A token without an expiry would be valid forever: `cairn token` always sets one.
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw new CairnError('unauthorized', tokenProblem(error), {}, { cause: error });
    }
    const claims = ClaimsSchema.safeParse(payload);
    if (!claims.success) {
      throw new CairnError(
        'unauthorized',
        `Token claims are malformed: expected { plan: string, role: read|write|admin, sub?: string }, the plan ${PATTERN_RULE}.`,
      );
    }
    const { plan, role, sub } = claims.data;
    if (!covers(plan)) {
      throw new CairnError('forbidden', `This token is for plan "${plan}", not ${what}.`, { plan });
    }
    if (!roleAllows(role, needs)) {
      throw new CairnError('forbidden', `This needs role ${needs}; the token has ${role}.`, {
        role,
        needs,
      });
    }
    const exp = (payload as { exp: number }).exp;
    return {
      planId,
      role,
      sub: sub ?? 'anonymous',
      pattern: plan,
      expiresAt: (exp + EXPIRY_TOLERANCE_SECONDS) * 1000,
    };
  };
  return {
    open: false,
    authorize: (token, planId, needs = 'read') =>
      verified(token, (plan) => planMatches(plan, planId), `"${planId}"`, planId, needs),
    authorizeScope: (token, scope, needs = 'read') =>
      verified(token, (plan) => scopeCovered(plan, scope), `a plan of scope "${scope}"`, scope, needs),
  };
}

/**
 * Whether a plan claim covers some plan of `scope` (the part of a plan id before its first `:`): an id or pattern
 * in the scope (`acme:conv:7`, `acme:*`), or a pattern whose fixed start reaches into it (`*`, `ac*`).
 */
export function scopeCovered(pattern: string, scope: string): boolean {
  const star = pattern.indexOf('*');
  const fixed = star < 0 ? pattern : pattern.slice(0, star);
  const colon = fixed.indexOf(':');
  if (colon >= 0) return fixed.slice(0, colon) === scope;
  return star < 0 ? pattern === scope : `${scope}:`.startsWith(fixed);
}

/**
 * Whether a plan claim covers every plan of `scope`: a fixed start that `<scope>:` begins with, then only `*`
 * (`acme:*`, `ac*`, `*`). What a whole scope shares (its skills) is changed only with such a token.
 */
export function scopeWhollyCovered(pattern: string, scope: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0 || /[^*]/.test(pattern.slice(star))) return false;
  return `${scope}:`.startsWith(pattern.slice(0, star));
}

function tokenProblem(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'Token expired.';
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return 'Token signature is not valid for this server.';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'Token must be signed with HS256.';
  if (
    error instanceof errors.JWTClaimValidationFailed &&
    error.claim === 'exp' &&
    error.reason === 'missing'
  ) {
    return 'Token has no expiry (exp): tokens without one are refused; `cairn token --ttl` sets it.';
  }
  if (error instanceof errors.JWTClaimValidationFailed) return `Token rejected: ${error.message}.`;
  return 'Token is malformed (not a signed JWT).';
}

/**
 * `pattern` is a plan id, or a glob where `*` matches any run of characters (`acme:*` matches `acme:1:conv:2`,
 * `*` matches every plan). Nothing else is special. Linear in the id's length: the literal parts between stars are
 * found left to right, each at its first place after the previous one (no backtracking, whatever the pattern).
 */
export function planMatches(pattern: string, planId: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === planId;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (first.length + last.length > planId.length) return false;
  if (!planId.startsWith(first) || !planId.endsWith(last)) return false;
  let at = first.length;
  const end = planId.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = planId.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

export function roleAllows(role: Role, needs: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needs);
}

/** `ttl`: seconds, or a jose time span like `1h`, `30m`, `7d`. */
export async function signToken(
  secret: string | Uint8Array,
  claims: TokenClaims,
  options: { ttl?: string | number } = {},
): Promise<string> {
  const parsed = ClaimsSchema.safeParse(claims);
  if (!parsed.success) {
    throw new CairnError(
      'invalid_argument',
      `Token claims need plan (an id or a pattern like "acme:*"; ${PATTERN_RULE}) and role (read, write or admin).`,
      { valid: { role: ROLES }, ...PLAN_PATTERN_LIMITS },
    );
  }
  const ttl = options.ttl ?? '1h';
  if (
    typeof ttl === 'string' &&
    !/^\d+\s*(s|sec|secs|m|min|mins|h|hr|hrs|d|day|days|w|week|weeks|y|year|years)$/.test(ttl)
  ) {
    throw new CairnError('invalid_argument', `ttl "${ttl}" is not a time span; use e.g. 90s, 30m, 1h, 7d.`, {
      field: 'ttl',
    });
  }
  const jwt = new SignJWT({ plan: parsed.data.plan, role: parsed.data.role })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt();
  if (parsed.data.sub) jwt.setSubject(parsed.data.sub);
  jwt.setExpirationTime(typeof ttl === 'number' ? Math.floor(Date.now() / 1000) + ttl : ttl);
  return jwt.sign(secretKey(secret));
}
