// The plan API over HTTP, so an agent in any language (or a dashboard) can use a plan without a Yjs client: the
// task list and status changes of seed 001's dashboard, the rendered context, the tools and their dispatcher,
// and a judge run. Every edit goes through the hub's doc, so live WebSocket clients see it at once.

import {
  CairnError,
  createPlan,
  createToolkit,
  type DefinitionFormat,
  FAMILY_NAMES,
  type FamilyName,
  isCairnError,
  isOpenStatus,
  isToolError,
  type Plan,
  RENDER_FORMATS,
  type RenderFormat,
  renderPlan,
  STATUSES,
  sinceLastCall,
  type TaskSnapshot,
} from '@cairn/core';
import { LEARNED_PROCEDURE_TOOL, learnedProcedureTool, type Skill } from '@cairn/core/learning';
import {
  ActorSchema,
  actorFor,
  CURSOR_NOTES,
  changesOrWhole,
  cursorFromStateVector,
  cursorKnown,
  cursorOf,
  DEFINITION_FORMATS,
  describeIssues,
  FAMILIES,
  isPrincipalActor,
  readCursor,
  StatusSchema,
  type TaskNumbers,
  type ToolCallRecord,
  taskNumbers,
  toDefinition,
  watchSkippedSteps,
} from '@cairn/core/protocol';
import { PresenceSchema } from '@cairn/core/websocket';
import type { Hono } from 'hono';
import * as Y from 'yjs';
import * as z from 'zod';
import type { Grant } from '../auth.js';
import { utf8Bytes } from '../bytes.js';
import type { AutoCloser } from '../extensions/auto-close.js';
import { type ClaimArbiterService, mayActAs } from '../extensions/claims.js';
import type { PlanHandle } from '../hub/extension.js';
import type { SyncHub } from '../hub/hub.js';
import { jsonResponse, readJson, STATUS_BY_CODE, textResponse } from './app.js';
import { authorizeRequest } from './routes.js';

export interface PlanRoutesOptions {
  /** Runs `POST /api/plans/:plan/judge`; without one that route answers 409 (no judge configured). */
  autoClose?: AutoCloser | null;
  /**
   * Whether the store holds the plan, asked before loading it so a read of an unknown plan creates nothing.
   * Without it the plan is loaded and counts as unknown when it is empty.
   */
  planExists?: (planId: string) => boolean;
  /** Clock for ages in the rendered context. Default `Date.now`. */
  now?: () => number;
  /**
   * Decides the claims of tool calls (`claim`, `claim_next`, `release`, `hand_off` of any family): the server's
   * arbiter, so they take the path a WebSocket client's claims take (in a cluster: reserved in Redis). Without one
   * they are decided on the plan's doc here.
   */
  claims?: Pick<ClaimArbiterService, 'arbiterFor'> | null;
  /** Records each tool call for the plan's trace (learning); it never fails the call. */
  recordCall?: ((planId: string, call: ToolCallRecord) => void) | null;
  /**
   * The scope's learned procedures (the server's learner): `get_learned_procedure` over the tool route and the
   * `learned_procedures` section of `POST .../context`. Without it the tool is unknown and the section empty.
   */
  learning?: LearnedSource | null;
}

/** Where the plan routes find learned procedures (`Learner` has these). */
export interface LearnedSource {
  skillsFor(planId: string): Promise<readonly Skill[]>;
  withLearned<T>(
    planId: string,
    fn: (learned: { skills: readonly Skill[]; traces: Y.Doc }) => Promise<T>,
  ): Promise<T>;
}

/** Default and largest `limit` of the task list (seed 001: at most 30). */
export const TASK_LIST_LIMIT = { default: 30, max: 500 } as const;
const MAX_BODY_BYTES = 1024 * 1024;
/**
 * Objects and arrays in one request: the work one call may ask for. Measured on a loaded 2-core machine, one
 * add_tasks of 40,200 tasks held the event loop 9.9 s; 945 tasks (45 with 20 steps each, within this bound) about
 * 0.1 s.
 */
const MAX_BODY_NODES = 1_000;

export function registerPlanRoutes(app: Hono, hub: SyncHub, options: PlanRoutesOptions = {}): void {
  const now = options.now ?? Date.now;
  const tools = toolCatalog();
  const reads = hub.registry.counter(
    'cairn_http_plan_reads_total',
    "HTTP reads of plans, by source: `memory` (loaded), `snapshot` (the store's first-read snapshot, while the plan loads) or `load` (waited for the load).",
  );
  const counted = (planId: string) => reads.inc({ source: hub.isLoaded(planId) ? 'memory' : 'load' });
  /** A read of the plan: from the store's snapshot if it is not loaded and has a valid one, else as withPlanView. */
  const read = async <T>(planId: string, actor: string, fn: (plan: Plan) => T): Promise<T> => {
    const fromSnapshot = readFromSnapshot(hub, planId, actor, (plan) => fn(plan));
    if (fromSnapshot) {
      reads.inc({ source: 'snapshot' });
      return fromSnapshot.answer;
    }
    counted(planId);
    return withPlanView(hub, options, planId, { actor }, (plan) => fn(plan));
  };

  app.get('/api/plans/:plan/tasks', async (c) => {
    const planId = c.req.param('plan');
    const url = new URL(c.req.url);
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const includeClosed = queryFlag(url, 'includeClosed');
    const limit = queryInt(url, 'limit', 1, TASK_LIST_LIMIT.max) ?? TASK_LIST_LIMIT.default;
    return read(planId, 'system', (plan) => {
      const numbers = taskNumbers(plan);
      const all = plan
        .children(null)
        .filter((t) => includeClosed || isOpenStatus(t.status))
        .sort(openFirstNewestFirst);
      const malformed = plan.malformed();
      return jsonResponse({
        plan: planId,
        tasks: all.slice(0, limit).map((t) => withSteps(plan, t, numbers)),
        total: all.length,
        limit,
        ...(malformed.length > 0 ? { malformed } : {}),
      });
    });
  });

  app.get('/api/plans/:plan/tasks/:taskId', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    return read(planId, 'system', (plan) =>
      jsonResponse({ task: withSteps(plan, taskOf(plan, c.req.param('taskId'))) }),
    );
  });

  app.patch('/api/plans/:plan/tasks/:taskId', async (c) => {
    const planId = c.req.param('plan');
    const grant = await authorizeRequest(hub, c.req.raw, planId, 'write');
    const actor = userActor(subjectOf(hub, grant));
    const body = parsePatch(await readBody(c.req.raw, false));
    return withPlanView(hub, options, planId, { actor }, async (plan, handle) => {
      hub.assertFits(planId, jsonBytes(body));
      const task = taskOf(plan, c.req.param('taskId'));
      const note = body.note ? (task.note ? `${task.note}\n${body.note}` : body.note) : undefined;
      // Closing the task skips its open steps in the same write (the plan's rule); the answer names them.
      const skipped = watchSkippedSteps(plan, task.id);
      const updated = plan.update(task.id, {
        status: body.status,
        ...(note !== undefined ? { note } : {}),
      });
      await handle.flush();
      const skippedSteps = skipped();
      return jsonResponse({
        task: withSteps(plan, updated),
        ...(skippedSteps.length > 0 ? { skippedSteps } : {}),
      });
    });
  });

  app.get('/api/plans/:plan/context', async (c) => {
    const planId = c.req.param('plan');
    const url = new URL(c.req.url);
    const grant = await authorizeRequest(hub, c.req.raw, planId, 'read');
    const format = queryEnum(url, 'format', RENDER_FORMATS) ?? 'native';
    const maxTokens = queryInt(url, 'maxTokens', 1, 1_000_000);
    // `as`: the agent reading (its own changes are left out of a delta), as a tool call names it.
    const reader = agentActor(hub, grant, url.searchParams.get('as'));
    const sinceParam = url.searchParams.get('since');
    const since = sinceParam ? readCursor(sinceParam) : null;
    const json = /\bapplication\/json\b/.test(c.req.header('accept') ?? '');
    // `known`: the document holds everything the reader's cursor names, so only what changed since is rendered,
    // unless that tells more than the whole plan (a cursor so old that most of the plan changed since).
    const respond = (plan: Plan, cursor: string, known: boolean): Response => {
      const full = () =>
        renderPlan(plan, {
          format: format as RenderFormat,
          presence: presenceOf(hub, planId),
          now: now(),
          ...(maxTokens !== undefined ? { maxTokens } : {}),
        });
      const { kind, text } = changesOrWhole(plan, {
        since,
        known,
        whole: full,
        exclude: reader,
        ids: format === 'native' ? 'id' : 'num',
        ...(maxTokens !== undefined ? { maxTokens } : {}),
      });
      if (json) return jsonResponse({ plan: planId, format, kind, text, cursor });
      const note = CURSOR_NOTES[kind];
      const body = note ? `${note}${text}` : text;
      return textResponse(body, 200, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        'cairn-cursor': cursor,
        'cairn-context': kind,
      });
    };
    // Without a cursor the whole plan is rendered: a plan not in memory can answer from its snapshot, whose
    // state vector is the stored document's (a delta since a cursor needs the document's history).
    const fromSnapshot =
      since === null
        ? readFromSnapshot(hub, planId, reader, (plan, cursor) => respond(plan, cursor, false))
        : null;
    if (fromSnapshot) {
      reads.inc({ source: 'snapshot' });
      return fromSnapshot.answer;
    }
    counted(planId);
    return withPlanOrBlank(hub, options, planId, (doc) => {
      const plan = createPlan({ doc, actor: reader });
      try {
        return respond(plan, cursorOf(doc), since !== null && cursorKnown(doc, since));
      } finally {
        plan.destroy();
      }
    });
  });

  app.get('/api/plans/:plan/tools', async (c) => {
    const planId = c.req.param('plan');
    const url = new URL(c.req.url);
    await authorizeRequest(hub, c.req.raw, planId, 'read');
    const format = (queryEnum(url, 'format', DEFINITION_FORMATS) ?? 'openai') as DefinitionFormat;
    const families = queryFamilies(url) ?? ['cairn'];
    // Definitions do not depend on the plan's content: read from the families, nothing is loaded or built.
    const definitions = families.flatMap((family) =>
      FAMILIES[family].tools.map((t) => toDefinition(t, format)),
    );
    return jsonResponse({ format, families, tools: definitions });
  });

  app.post('/api/plans/:plan/tools/:name', async (c) => {
    const planId = c.req.param('plan');
    const name = c.req.param('name');
    const url = new URL(c.req.url);
    const families = queryFamilies(url);
    // get_learned_procedure belongs to no family: it is offered wherever the server learns.
    const learnedTool = name === LEARNED_PROCEDURE_TOOL && options.learning ? options.learning : null;
    const known = learnedTool ? { family: null, readOnly: true } : tools.get(name);
    const offered =
      known && (!families || known.family === null || families.includes(known.family)) ? known : null;
    // A read-only tool needs only read access; every other call (and an unknown tool) needs write.
    const grant = await authorizeRequest(hub, c.req.raw, planId, offered?.readOnly ? 'read' : 'write');
    const actor = agentActor(hub, grant, url.searchParams.get('as'));
    if (!offered) {
      const valid = families
        ? [...tools].filter(([, t]) => families.includes(t.family)).map(([n]) => n)
        : [...tools.keys()];
      throw new CairnError(
        'unknown_tool',
        `There is no tool ${JSON.stringify(name)}${families ? ` in the families ${families.join(', ')}` : ''}. ` +
          `Tools: ${valid.join(', ')}.`,
        { valid },
      );
    }
    const args = await readBody(c.req.raw, true);
    const sinceParam = url.searchParams.get('since');
    const since = sinceParam ? readCursor(sinceParam) : null;
    // A write may create the plan (its first add_tasks); a read-only tool reads a plan nobody wrote to as an empty
    // one (200, nothing created), as task_manage's and todo's list actions do.
    const skills = learnedTool ? await learnedTool.skillsFor(planId) : null;
    // `writes`: the plan is the hub's (not a blank stand-in), so claims take the server's arbiter, as in withPlanView.
    const onPlan = async (doc: Y.Doc, flush: () => Promise<void>, writes: boolean): Promise<Response> => {
      const plan = createPlan({ doc, actor });
      if (writes && options.claims) plan.useArbiter(options.claims.arbiterFor({ planId, doc }));
      let call: ToolCallRecord | null = null;
      const toolkit = createToolkit(plan, {
        actor,
        families: offered.family ? [offered.family] : [],
        ...(skills ? { extraTools: [learnedProcedureTool(() => skills)] } : {}),
        now,
        onCall: (record) => {
          call = record;
        },
      });
      try {
        if (!offered.readOnly) hub.assertFits(planId, jsonBytes(args));
        const result = await toolkit.dispatch(name, args);
        if (!offered.readOnly && !isToolError(result)) await flush();
        // Traced once its write is stored (the learner writes traces in batches, not waited on here). A read of a
        // plan nobody wrote to teaches nothing and would create its trace: not recorded.
        if (call && options.recordCall && !(offered.readOnly && doc.store.clients.size === 0)) {
          options.recordCall(planId, call);
        }
        const status = isToolError(result) ? (STATUS_BY_CODE[result.error.code] ?? 400) : 200;
        const cursor = cursorOf(doc);
        // With the cursor of its previous call, the caller also hears what others did in between.
        // Tasks are named as the tool's family names them (string ids in the cairn family).
        const ids = offered.family ? FAMILIES[offered.family].ids : 'id';
        const news = since && cursorKnown(doc, since) ? sinceLastCall(plan, since, { actor, ids }) : null;
        return jsonResponse(
          since ? { result: result ?? null, sinceLastCall: news, cursor } : (result ?? null),
          status,
          { 'cairn-cursor': cursor },
        );
      } finally {
        toolkit.destroy();
        plan.destroy();
      }
    };
    if (offered.readOnly) {
      return withPlanOrBlank(hub, options, planId, (doc) => onPlan(doc, async () => {}, false));
    }
    return withPlan(hub, options, planId, (handle) => onPlan(handle.doc, () => handle.flush(), true), true);
  });

  app.post('/api/plans/:plan/judge', async (c) => {
    const planId = c.req.param('plan');
    await authorizeRequest(hub, c.req.raw, planId, 'write');
    const autoClose = options.autoClose;
    if (!autoClose) {
      throw new CairnError(
        'conflict',
        'No judge is configured, so tasks are never closed automatically. Start the server with ' +
          'CAIRN_JUDGE_URL and CAIRN_JUDGE_MODEL (and CAIRN_JUDGE_KEY) set.',
      );
    }
    return withPlan(hub, options, planId, async () => {
      const run = await autoClose.run(planId);
      if (run.error) {
        throw new CairnError('internal', `${run.error} No task was changed.`, { status: 502, run });
      }
      return jsonResponse(run);
    });
  });
}

// ------------------------------------------------------------------ auth and actors

/** The token's subject; `local` on an open server. */
export function subjectOf(hub: SyncHub, grant: Grant): string {
  return hub.auth.open ? 'local' : grant.sub;
}

function checkActor(actor: string, sub: string): string {
  if (!isPrincipalActor(actor)) {
    throw new CairnError(
      'forbidden',
      `The token's subject "${sub}" cannot name an actor: a subject is 1 to 100 characters without spaces.`,
    );
  }
  return actor;
}

/** A person's change (the dashboard): `user:<sub>`, or the sub itself when it names an actor. */
export function userActor(sub: string): string {
  return checkActor(actorFor(sub, 'user'), sub);
}

/**
 * Who a tool call acts as: `agent:<sub>` (or the sub itself when it names an actor), or `?as=` when that is one
 * of the token's own actors (`user:<sub>`, `agent:<sub>/<name>`). On an open server `?as=` may name anyone.
 */
export function agentActor(hub: SyncHub, grant: Grant, as: string | null): string {
  const sub = subjectOf(hub, grant);
  const own = checkActor(actorFor(sub, 'agent'), sub);
  if (as === null || as === '') return own;
  if (!isPrincipalActor(as)) {
    throw new CairnError(
      'invalid_argument',
      `?as=${as} is not an actor; use "agent:<name>" or "user:<name>".`,
      {
        field: 'as',
      },
    );
  }
  if (!hub.auth.open && !mayActAs(sub, as)) {
    throw new CairnError(
      'forbidden',
      `This token (subject "${sub}") may act as ${own}, its other actor or its agents (${own}/<name>); not ${as}.`,
      { field: 'as' },
    );
  }
  return as;
}

// ------------------------------------------------------------------ plans

/**
 * Runs `fn` on a plan the store holds; an unknown (never written) plan is a 404 and nothing is created, unless
 * `create` (a write that may be the plan's first). The plan is released afterwards.
 */
export async function withPlan<T>(
  hub: SyncHub,
  options: PlanRoutesOptions,
  planId: string,
  fn: (handle: PlanHandle) => T | Promise<T>,
  create = false,
): Promise<T> {
  if (!create && !hub.isLoaded(planId) && options.planExists && !options.planExists(planId)) {
    throw unknownPlan(planId);
  }
  const handle = await hub.openPlan(planId);
  try {
    if (!create && handle.doc.store.clients.size === 0) throw unknownPlan(planId);
    return await fn(handle);
  } finally {
    handle.release();
  }
}

/** `withPlan` with a Plan view of the doc whose writes are attributed to `actor`, destroyed afterwards. */
function withPlanView<T>(
  hub: SyncHub,
  options: PlanRoutesOptions,
  planId: string,
  view: { actor: string; create?: boolean },
  fn: (plan: Plan, handle: PlanHandle) => T | Promise<T>,
): Promise<T> {
  return withPlan(
    hub,
    options,
    planId,
    async (handle) => {
      const plan = createPlan({ doc: handle.doc, actor: view.actor });
      if (options.claims) plan.useArbiter(options.claims.arbiterFor({ planId, doc: handle.doc }));
      try {
        return await fn(plan, handle);
      } finally {
        plan.destroy();
      }
    },
    view.create,
  );
}

/**
 * `withPlan` for what reads a plan's context: an unknown plan reads as an empty one (a blank document, nothing
 * created), so an agent's context section for a plan nobody wrote yet is simply empty, as for a cleared plan.
 */
export async function withPlanOrBlank<T>(
  hub: SyncHub,
  options: PlanRoutesOptions,
  planId: string,
  fn: (doc: Y.Doc) => T | Promise<T>,
): Promise<T> {
  try {
    return await withPlan(hub, options, planId, (handle) => fn(handle.doc));
  } catch (error) {
    if (!(isCairnError(error) && error.code === 'not_found' && error.details.planId === planId)) throw error;
  }
  const blank = new Y.Doc();
  try {
    return await fn(blank);
  } finally {
    blank.destroy();
  }
}

/**
 * Serves a read of a plan that is not loaded from the store's first-read snapshot when it holds a valid one
 * (decisions/019, 024), so the answer does not wait for the whole history to load; `fn` gets a Plan over the
 * snapshot's content and the stored document's cursor. The plan is then loaded behind the answer, so the next
 * request and every write find it in memory. Returns `fn`'s answer, or null (nothing done) when the plan is loaded
 * or has no valid snapshot. Writes never come here: they wait for the load (`withPlanView`).
 */
function readFromSnapshot<T>(
  hub: SyncHub,
  planId: string,
  actor: string,
  fn: (plan: Plan, cursor: string) => T,
): { answer: T } | null {
  if (hub.isLoaded(planId)) return null;
  const snapshot = hub.store.firstRead?.(planId);
  if (!snapshot) return null;
  let doc: Y.Doc;
  try {
    doc = snapshot.doc();
  } catch {
    return null; // a checksum over content we cannot rebuild: ignored, never served
  }
  if (doc.store.clients.size === 0) {
    doc.destroy();
    return null; // nothing was ever written: an unknown plan, answered as before
  }
  // Started after this answer is written: the load of a long history holds the event loop for a while.
  setTimeout(() => {
    hub.openPlan(planId).then(
      (handle) => handle.release(),
      () => undefined, // the hub logs a failed load; the next request reports it
    );
  }, 0);
  const plan = createPlan({ doc, actor });
  try {
    return { answer: fn(plan, cursorFromStateVector(snapshot.stateVector)) };
  } finally {
    plan.destroy();
    doc.destroy();
  }
}

function unknownPlan(planId: string): CairnError {
  return new CairnError(
    'not_found',
    `There is no plan "${planId}" (nothing was ever written to it). A plan is created by its first write: ` +
      `POST /api/plans/${encodeURIComponent(planId)}/tools/add_tasks, or a client syncing it.`,
    { planId },
  );
}

function openFirstNewestFirst(a: TaskSnapshot, b: TaskSnapshot): number {
  const open = Number(isOpenStatus(b.status)) - Number(isOpenStatus(a.status));
  return open || b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/**
 * The task a path names: its id, or its task number (seed 001's: the conversation's tasks counted, steps not),
 * which the ongoing_task tools return as `taskId`.
 */
function taskOf(plan: Plan, ref: string): TaskSnapshot {
  const byId = plan.get(ref);
  if (byId) return byId;
  const numbered = /^[1-9]\d{0,8}$/.test(ref) ? taskNumbers(plan).byNumber(Number(ref)) : undefined;
  return numbered ?? plan.require(ref);
}

/**
 * A task with its direct steps and its task number, as the dashboard shows it. The number is the one the
 * dashboard, the ongoing_task tools and these routes share; `num` repeats it for clients that read that field
 * (the plan's own integer alias counts steps too, so it named another task number in the routes).
 */
function withSteps(plan: Plan, task: TaskSnapshot, numbers: TaskNumbers = taskNumbers(plan)) {
  const number = numbers.numberOf(task.id) ?? null;
  return {
    ...task,
    num: number,
    number,
    steps: plan.children(task.id).map((s) => ({ id: s.id, title: s.title, status: s.status })),
  };
}

/** Who is connected and on what, from the plan's awareness (`presence` states of @cairn/core/websocket). */
export function presenceOf(hub: SyncHub, planId: string): Array<{ actor: string; taskId: string | null }> {
  const room = hub.loadedRoom(planId);
  if (!room) return [];
  const out: Array<{ actor: string; taskId: string | null }> = [];
  for (const state of room.awareness.getStates().values()) {
    const presence = PresenceSchema.safeParse((state as { presence?: unknown }).presence);
    if (presence.success && ActorSchema.safeParse(presence.data.id).success) {
      out.push({ actor: presence.data.id, taskId: presence.data.activeTask ?? null });
    }
  }
  return out;
}

/** Every tool of every family: its family, and whether it only reads (MCP's readOnlyHint). */
function toolCatalog(): Map<string, { family: FamilyName; readOnly: boolean }> {
  const catalog = new Map<string, { family: FamilyName; readOnly: boolean }>();
  for (const family of FAMILY_NAMES) {
    for (const tool of FAMILIES[family].tools) {
      catalog.set(tool.name, { family, readOnly: tool.annotations?.readOnlyHint === true });
    }
  }
  return catalog;
}

// ------------------------------------------------------------------ request parsing

const PatchSchema = z.strictObject({
  status: StatusSchema,
  note: z.string().trim().min(1).max(2000).optional(),
});
const PATCH_SHAPE = `{ "status": ${STATUSES.join(' | ')}, "note"?: string (at most 2000 characters, appended to the task's note) }`;

function parsePatch(body: unknown): z.infer<typeof PatchSchema> {
  return parseBody(PatchSchema, body, PATCH_SHAPE, { valid: { status: [...STATUSES] } });
}

/**
 * A request body as `schema` says, or a CairnError `invalid_argument` ("Invalid <what>: <path>: <problem>; ...
 * Expected <shape>.") naming each problem, with `valid` values in its details.
 */
export function parseBody<T extends z.ZodType>(
  schema: T,
  body: unknown,
  shape: string,
  { what = 'body', valid }: { what?: string; valid?: Record<string, readonly string[]> } = {},
): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const { text } = describeIssues(parsed.error, { root: 'body' });
  throw new CairnError('invalid_argument', `Invalid ${what}: ${text}. Expected ${shape}.`, {
    field: 'body',
    ...(valid ? { valid } : {}),
  });
}

/** The JSON body; an empty body is `undefined` when `optional` (a tool without arguments). */
/**
 * Bytes of a request's JSON body as read: what a write from it adds to a plan, about (the server refuses a write
 * that would grow the plan past its limit: `SyncHub.assertFits`).
 */
export function jsonBytes(body: unknown): number {
  return body === undefined ? 0 : utf8Bytes(JSON.stringify(body));
}

export function readBody(request: Request, optional: boolean): Promise<unknown> {
  return readJson(request, { maxBytes: MAX_BODY_BYTES, maxNodes: MAX_BODY_NODES, optional });
}

function queryFlag(url: URL, name: string): boolean {
  const value = url.searchParams.get(name);
  if (value === null || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new CairnError('invalid_argument', `?${name}=${value} is not a flag; use ${name}=1 or ${name}=0.`, {
    field: name,
    valid: ['1', '0', 'true', 'false'],
  });
}

export function queryInt(url: URL, name: string, min: number, max: number): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null || value === '') return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new CairnError('invalid_argument', `?${name}=${value} must be an integer from ${min} to ${max}.`, {
      field: name,
      min,
      max,
    });
  }
  return n;
}

function queryEnum<T extends string>(url: URL, name: string, valid: readonly T[]): T | undefined {
  const value = url.searchParams.get(name);
  if (value === null || value === '') return undefined;
  if (!(valid as readonly string[]).includes(value)) {
    throw new CairnError('invalid_argument', `?${name}=${value} is not one of ${valid.join(', ')}.`, {
      field: name,
      valid: [...valid],
    });
  }
  return value as T;
}

/** `families=cairn,ongoing_task` (or repeated); undefined when absent. */
function queryFamilies(url: URL): FamilyName[] | undefined {
  const values = url.searchParams
    .getAll('families')
    .flatMap((v) => v.split(','))
    .map((v) => v.trim());
  const names = values.filter((v) => v !== '');
  if (names.length === 0) return undefined;
  const unknown = names.filter((n) => !(FAMILY_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new CairnError(
      'invalid_argument',
      `Unknown tool famil${unknown.length > 1 ? 'ies' : 'y'} ${unknown.join(', ')}; families: ${FAMILY_NAMES.join(', ')}.`,
      { field: 'families', valid: [...FAMILY_NAMES] },
    );
  }
  return [...new Set(names)] as FamilyName[];
}
