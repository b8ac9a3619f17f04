// The Worker's environment: the same names as `cairn serve` (CAIRN_SECRET, CAIRN_JUDGE_URL, ...), the Durable
// Object binding, and the explicit opt-in that lets local development run without a secret.
import { CairnError } from '@cairn/core';
import { type Authenticator, createAuthenticator } from '../auth.js';
import { SQLITE_MAX_CHUNK_BYTES } from './sqlite-adapter.js';
import type { DurableObjectNamespace } from './workers-types.js';

export interface CairnWorkerEnv {
  /** The Durable Object namespace of `CairnPlanObject` (wrangler: `durable_objects.bindings`). */
  CAIRN_PLANS: DurableObjectNamespace;
  /** HS256 secret, at least 32 bytes: the one `cairn token` signs with (`wrangler secret put CAIRN_SECRET`). */
  CAIRN_SECRET?: string;
  /**
   * `"1"`: serve without a secret, every request an admin. For `wrangler dev` only; without it and without a
   * secret every request is refused (503), so a deployment never runs open by accident.
   */
  CAIRN_DEV_OPEN?: string;
  /** How long a claim survives its holder's absence (ms), as `cairn serve --lease-ms`. */
  CAIRN_LEASE_MS?: string;
  /** The judge of auto-close (an OpenAI-compatible base URL), its model and key, as for `cairn serve`. */
  CAIRN_JUDGE_URL?: string;
  CAIRN_JUDGE_MODEL?: string;
  CAIRN_JUDGE_KEY?: string;
  /**
   * The model proxy (`/api/model`), as for `cairn serve`: CAIRN_LLM_BASE_URL, CAIRN_LLM_MODEL, CAIRN_LLM_API_KEY
   * (or OPENAI_BASE_URL / OPENAI_API_KEY) and CAIRN_LLM_LABEL.
   */
  CAIRN_LLM_BASE_URL?: string;
  CAIRN_LLM_MODEL?: string;
  CAIRN_LLM_API_KEY?: string;
  /**
   * The most bytes the object writes in one SQLite row (default 1 MiB, at most 1,900,000): a larger record or
   * snapshot is split over rows, since Cloudflare refuses a row over 2 MB. Set lower to exercise the split.
   */
  CAIRN_SQLITE_CHUNK_BYTES?: string;
  /** Static assets (wrangler `assets.binding`): the demo, served for paths no route has. */
  ASSETS?: { fetch(request: Request): Promise<Response> };
  [name: string]: unknown;
}

/** The header the Worker names the object's plan with (set from the path; a client's own value is replaced). */
export const PLAN_HEADER = 'x-cairn-plan-object';

/** The header Cloudflare gives the client's address in (the rate limit's caller without a token). */
export const ADDRESS_HEADER = 'cf-connecting-ip';

/**
 * Throws CairnError `storage` (503) when the Worker cannot serve as configured: no secret and no local-development
 * opt-in, or a variable Cairn reads that does not parse (each object would otherwise refuse every request its own
 * way). The Worker checks it for its own routes and every plan object when it starts.
 */
export function assertConfigured(env: CairnWorkerEnv): void {
  leaseMsFromEnv(env);
  chunkBytesFromEnv(env);
  if (typeof env.CAIRN_SECRET === 'string' && env.CAIRN_SECRET.trim() !== '') return;
  if (env.CAIRN_DEV_OPEN === '1') return;
  throw new CairnError(
    'storage',
    'This Cairn Worker has no secret, so it serves nothing. Set one with `wrangler secret put CAIRN_SECRET` ' +
      '(at least 32 bytes; `cairn token` signs with the same), or for local development only set the var CAIRN_DEV_OPEN = "1".',
    { status: 503 },
  );
}

export function authenticatorFromEnv(env: CairnWorkerEnv): Authenticator {
  assertConfigured(env);
  const secret = typeof env.CAIRN_SECRET === 'string' ? env.CAIRN_SECRET.trim() : '';
  return createAuthenticator({ secret: secret === '' ? null : secret });
}

/** The string variables of the environment (bindings left out), for readers such as `judgeFromEnv`. */
export function stringVars(env: CairnWorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}

/** `CAIRN_SQLITE_CHUNK_BYTES` (bytes per row part), or undefined for the adapter's default. */
export function chunkBytesFromEnv(env: CairnWorkerEnv): number | undefined {
  const value = env.CAIRN_SQLITE_CHUNK_BYTES;
  if (value === undefined || value === '') return undefined;
  const bytes = Number(value);
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > SQLITE_MAX_CHUNK_BYTES) {
    throw misconfigured(
      `CAIRN_SQLITE_CHUNK_BYTES is "${value}": give a whole number of bytes from 1 to ${SQLITE_MAX_CHUNK_BYTES} ` +
        "(Cloudflare refuses rows over 2 MB), or leave it out for the default's 1 MiB.",
    );
  }
  return bytes;
}

/** `CAIRN_LEASE_MS` (how long an absent claimer keeps a claim), or undefined for the default. */
export function leaseMsFromEnv(env: CairnWorkerEnv): number | undefined {
  const value = env.CAIRN_LEASE_MS;
  if (value === undefined || value === '') return undefined;
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms < 0) {
    throw misconfigured(
      `CAIRN_LEASE_MS is "${value}": give milliseconds, 0 or more, or leave it out for the default.`,
    );
  }
  return ms;
}

/** A Worker variable that does not parse: the operator's to fix, so 503, not the client's 400. */
function misconfigured(message: string): CairnError {
  return new CairnError('storage', `${message} This Cairn Worker serves nothing until it is fixed.`, {
    status: 503,
  });
}
