// The MCP server over a live plan: the toolkit's tools (their MCP definitions, run by its dispatcher, so a model
// gets the same tools and the same errors as through any other client) and the rendered plan as a resource that
// tells subscribers when anyone changes the plan.
import {
  type CairnError,
  createToolkit,
  type FamilyName,
  isToolError,
  type Plan,
  type RenderFormat,
  renderPlan,
} from '@cairn/core';
import { learnedProcedureTool, readSkills, traceRecorder } from '@cairn/core/learning';
import {
  escapeUnseenInJson,
  FAMILIES,
  type Presence,
  sinceLastCallFeed,
  type ToolCallRecord,
} from '@cairn/core/protocol';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import * as Y from 'yjs';
import { contextTool, planChangesTool } from './context.js';
import { createConversation } from './conversation.js';
import type { WriteStatus } from './live-plan.js';
import { guardSession } from './session.js';

export interface CairnMcpOptions {
  plan: Plan;
  planId: string;
  /** Tool families to offer. Default `['cairn']`. */
  families?: readonly FamilyName[];
  /** How the plan resource is rendered. Default `native`. */
  format?: RenderFormat;
  /** Who else is here, for the rendered plan. */
  presence?: () => Presence[];
  /** Subscribe to presence changes (they change the rendered plan too). */
  onPresence?: (listener: () => void) => () => void;
  /** After each tool call: the task this actor now works on, for presence. */
  onActiveTask?: (taskId: string | null) => void;
  /**
   * Add to each tool result what others changed (and the notices they left in the chat) since this agent's
   * previous call, at most 300 tokens. Default true.
   */
  sinceLastCall?: boolean;
  /** Notifications are sent at most this often. Default 50 ms. */
  notifyDelayMs?: number;
  /** The plan's trace document: each tool call is recorded there (learned procedures). */
  traces?: Y.Doc | null;
  /** The scope's learned skills: `get_learned_procedure` is offered when given. */
  skills?: Y.Doc | null;
  /**
   * After a tool call that changed the plan: whether the edit is on the server (`LivePlan.confirmWrites`). A JSON
   * result gets `synced` (and `pending`, why not); a text result gets a line when it is not. `undo` takes the
   * call's writes back, for a server that refuses them for good: the call then answers with that refusal.
   */
  confirmWrites?: (undo: () => void) => Promise<WriteStatus | null>;
}

export interface CairnMcpServer {
  readonly server: Server;
  /** `cairn://plan/<planId>`: the rendered plan. */
  readonly resourceUri: string;
  close(): Promise<void>;
}

const VERSION = '0.1.0';

/**
 * `cairn://plan/<planId>`, encoded only where a URI path must be: a plan id's colons stay as they are
 * (`cairn://plan/acme:conv:14`), so the id a person reads is the id a client asks for. The encoded form is read too.
 */
export function planResourceUri(planId: string): string {
  return `cairn://plan/${encodeURIComponent(planId).replace(/%3A/gi, ':')}`;
}

export function createCairnMcpServer(options: CairnMcpOptions): CairnMcpServer {
  const { plan, planId } = options;
  const format = options.format ?? 'native';
  const conversation = createConversation(plan);
  const families = options.families ?? ['cairn'];
  const record = options.traces ? traceRecorder(options.traces) : null;
  // Each call's record, keyed by its arguments object (the observer is handed the very object dispatched).
  const finished = new Map<unknown, ToolCallRecord>();
  // Lines about tasks name them as the offered families do: integers only when every family speaks them.
  const ids = families.every((f) => FAMILIES[f].ids === 'num') ? 'num' : 'id';
  const toolkit = createToolkit(plan, {
    families,
    // A call is recorded once the server has answered for its writes (below), so a refused one is traced as such.
    ...(record ? { onCall: (call: ToolCallRecord) => finished.set(call.args, call) } : {}),
    // One dispatcher for every tool: the same argument parsing, null handling and error shape.
    extraTools: [
      ...(options.skills ? [learnedProcedureTool(() => readSkills(options.skills!))] : []),
      ...conversation.tools,
      contextTool(plan, options.presence),
      planChangesTool(plan, ids, () => render()),
    ],
  });
  const uri = planResourceUri(planId);
  const server = new SessionServer(
    { name: 'cairn', title: 'Cairn shared plan', version: VERSION },
    {
      capabilities: { tools: {}, resources: { subscribe: true } },
      instructions: instructions(planId, plan.actor, toolkit.families, uri),
    },
  );
  const since = options.sinceLastCall === false ? null : sinceLastCallFeed(plan, { ids });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: toolkit.definitions('mcp'),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params;
    const before = Y.getState(plan.doc.store, plan.doc.clientID);
    // The call's own writes, each one undo step of this actor's, in case the server refuses them.
    let writes = 0;
    const count = (txn: Y.Transaction) => {
      if (txn.local && txn.origin === plan.actor && txn.changed.size > 0) writes++;
    };
    plan.doc.on('afterTransaction', count);
    const input = args ?? {};
    let result: unknown;
    try {
      result = await toolkit.dispatch(name, input);
    } finally {
      plan.doc.off('afterTransaction', count);
    }
    const call = finished.get(input);
    finished.delete(input);
    const wrote = Y.getState(plan.doc.store, plan.doc.clientID) !== before;
    const undo = () => {
      for (let i = 0; i < writes; i++) plan.undo({ redo: false });
    };
    const confirmed = wrote ? ((await options.confirmWrites?.(undo)) ?? null) : null;
    options.onActiveTask?.(activeTask(plan));
    if (confirmed && 'refused' in confirmed) result = refusedResult(confirmed.refused);
    if (call && record) record(tracedAs(call, result));
    const status = confirmed && !('refused' in confirmed) ? confirmed : null;
    // What others did meanwhile (a wake-up included) rides along, so the agent learns of it now; what the result
    // itself already told (plan_changes) is not told twice.
    const news = withoutRepeats(since?.next() ?? '', name === 'plan_changes' ? result : null);
    const pendingLine = typeof result === 'string' && status?.synced === false ? status.pending : '';
    return {
      content: [
        { type: 'text' as const, text: typeof result === 'string' ? result : toolJson(result, status) },
        ...(pendingLine ? [{ type: 'text' as const, text: pendingLine }] : []),
        ...(news ? [{ type: 'text' as const, text: news }] : []),
      ],
      ...(isToolError(result) ? { isError: true } : {}),
    };
  });

  const render = () =>
    renderPlan(plan, { format, ...(options.presence ? { presence: options.presence() } : {}) });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [
      {
        uri,
        name: 'plan',
        title: `Plan ${planId}`,
        description:
          'The shared plan as the model sees it: what is ready, taken, blocked, waiting and finished.',
        mimeType: 'text/markdown',
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    requireUri(request.params.uri, uri);
    return {
      contents: [{ uri, mimeType: 'text/markdown', text: render() || '(The plan has no tasks yet.)' }],
    };
  });

  let subscribed = false;
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    requireUri(request.params.uri, uri);
    subscribed = true;
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    requireUri(request.params.uri, uri);
    subscribed = false;
    return {};
  });

  // Changes arrive in bursts (a sync step carries many); one notification per burst is enough.
  let timer: ReturnType<typeof setTimeout> | null = null;
  const changed = () => {
    if (!subscribed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      server.sendResourceUpdated({ uri }).catch(() => undefined); // the client may be gone
    }, options.notifyDelayMs ?? 50);
  };
  const offChange = plan.onChange(changed);
  const offPresence = options.onPresence?.(changed) ?? (() => undefined);

  return {
    server,
    resourceUri: uri,
    async close() {
      offChange();
      offPresence();
      if (timer) clearTimeout(timer);
      toolkit.destroy();
      conversation.destroy();
      await server.close();
    },
  };
}

/** An SDK Server that holds every transport it connects to the session rules (`session.ts`). */
class SessionServer extends Server {
  override connect(transport: Transport): Promise<void> {
    return super.connect(guardSession(transport));
  }
}

/** What the server tells a client about itself, naming only the tools of the families it offers. */
function instructions(planId: string, actor: string, families: readonly FamilyName[], uri: string): string {
  const uses = families.map((family) => FAMILY_USE[family]);
  return (
    `A task plan shared live with other agents and people (plan "${planId}", you are ${actor}). ` +
    `${uses.join(' ')} resolve_context turns a context template into messages, and plan_changes tells what ` +
    'others changed since a cursor. read_chat and add_chat_message are the conversation that goes with the ' +
    "plan. Each tool result ends with what others did since your previous call (a task's wake-up included). " +
    `The resource ${uri} is the current plan; subscribe to hear when others change it.`
  );
}

const FAMILY_USE: Record<FamilyName, string> = {
  cairn:
    'Claim a task (claim, claim_next) before working on it, so no two agents do the same work; mark it done ' +
    'with update_tasks.',
  task_manage: 'Keep your task list with task_manage (actions list, add, update, remove, clear, replace).',
  todo: 'Keep your todo list with todo (or TodoWrite), sending the whole list each time.',
  task_graph:
    'Add tasks with create_task (blocked_by for what must finish first), take one from list_ready_tasks, ' +
    'and finish it with complete_task.',
  ongoing_task:
    'Record what you are in the middle of with set_ongoing_task, list it with get_ongoing_task, and close it ' +
    'with clear_ongoing_task.',
  cairn_compact:
    'Read with read_tasks, add, change or remove with write_tasks, and claim a task with claim_task before ' +
    'working on it, so no two agents do the same work.',
};

/** `news` without the lines a `plan_changes` result already holds; '' when none is left. */
function withoutRepeats(news: string, result: unknown): string {
  const told = (result as { changes?: unknown } | null)?.changes;
  if (!news || typeof told !== 'string' || told === '') return news;
  const seen = new Set(told.split('\n'));
  const [header, ...lines] = news.split('\n');
  const fresh = lines.filter((line) => !seen.has(line));
  return fresh.length > 0 ? [header, ...fresh].join('\n') : '';
}

/** Whether two plan URIs name the same plan, percent-encoded or not (`cairn://plan/acme:conv:14`). */
function sameUri(a: string, b: string): boolean {
  const plain = (uri: string) => {
    try {
      return decodeURIComponent(uri);
    } catch {
      return uri;
    }
  };
  return a === b || plain(a) === plain(b);
}

function requireUri(asked: string, uri: string): void {
  if (!sameUri(asked, uri)) {
    throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${asked}; this server has ${uri}.`);
  }
}

/**
 * A JSON tool result, with the write status when there is one. Characters a reader takes for a line break or
 * cannot see (bidi controls, zero-width characters: the set renders show by code point) are written as \\u
 * escapes by core's `escapeUnseenInJson`: the JSON means the same, and a title cannot pass for several lines or
 * for reordered text in what the model reads.
 */
export function toolJson(result: unknown, status: WriteStatus | null = null): string {
  const value =
    status && result !== null && typeof result === 'object' && !Array.isArray(result)
      ? { ...result, ...status }
      : result;
  return escapeUnseenInJson(JSON.stringify(value));
}

/** What a model reads when the server refused its call's edits for good, and they were undone. */
/** The call as its trace keeps it: refused when the server refused its writes after the dispatch said ok. */
function tracedAs(call: ToolCallRecord, result: unknown): ToolCallRecord {
  if (call.outcome !== 'ok' || !isToolError(result)) return call;
  const { code, message } = (result as { error: { code: ToolCallRecord['outcome']; message: string } }).error;
  return { ...call, outcome: code, message };
}

function refusedResult(refusal: CairnError): { error: { code: string; message: string } } {
  return {
    error: {
      ...refusal.toJSON(),
      code: refusal.code,
      message:
        `The server refused this change: ${refusal.message.replace(/\.$/, '')}. Nothing was changed (the edit ` +
        'was undone here too). Write less in one call, or remove finished tasks first.',
    },
  };
}

/** The in-progress task this actor holds, if any (what presence says it is on). */
function activeTask(plan: Plan): string | null {
  return plan.list({ assignee: plan.actor, status: 'in_progress' })[0]?.id ?? null;
}
