// The MCP server over a live plan: the toolkit's tools (their MCP definitions, run by its dispatcher, so a model
// gets the same tools and the same errors as through any other client) and the rendered plan as a resource that
// tells subscribers when anyone changes the plan.
import {
  createToolkit,
  type FamilyName,
  isToolError,
  learnedProcedureTool,
  type Plan,
  type Presence,
  type RenderFormat,
  readSkills,
  renderPlan,
  sinceLastCallFeed,
  traceRecorder,
} from '@cairn/core';
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
   * result gets `synced` (and `pending`, why not); a text result gets a line when it is not.
   */
  confirmWrites?: () => Promise<WriteStatus | null>;
}

export interface CairnMcpServer {
  readonly server: Server;
  /** `cairn://plan/<planId>`: the rendered plan. */
  readonly resourceUri: string;
  close(): Promise<void>;
}

const VERSION = '0.1.0';

export function planResourceUri(planId: string): string {
  return `cairn://plan/${encodeURIComponent(planId)}`;
}

export function createCairnMcpServer(options: CairnMcpOptions): CairnMcpServer {
  const { plan, planId } = options;
  const format = options.format ?? 'native';
  const conversation = createConversation(plan);
  const toolkit = createToolkit(plan, {
    families: options.families ?? ['cairn'],
    ...(options.traces ? { onCall: traceRecorder(options.traces) } : {}),
    // One dispatcher for every tool: the same argument parsing, null handling and error shape.
    extraTools: [
      ...(options.skills ? [learnedProcedureTool(() => readSkills(options.skills!))] : []),
      ...conversation.tools,
      contextTool(plan, options.presence),
      planChangesTool(plan),
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
  const since = options.sinceLastCall === false ? null : sinceLastCallFeed(plan);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: toolkit.definitions('mcp'),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params;
    const before = Y.getState(plan.doc.store, plan.doc.clientID);
    const result = await toolkit.dispatch(name, args ?? {});
    options.onActiveTask?.(activeTask(plan));
    const wrote = Y.getState(plan.doc.store, plan.doc.clientID) !== before;
    const status = wrote ? ((await options.confirmWrites?.()) ?? null) : null;
    // What others did meanwhile (a wake-up included) rides along, so the agent learns of it now.
    const news = since?.next() ?? '';
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

function requireUri(asked: string, uri: string): void {
  if (asked !== uri) {
    throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${asked}; this server has ${uri}.`);
  }
}

/**
 * A JSON tool result, with the write status when there is one. Characters a reader takes for a line break
 * (U+0085, U+2028, U+2029) or that reorder what it shows (bidi controls) are written as \\u escapes: the JSON
 * means the same, and a title cannot pass for several lines or for reversed text in what the model reads.
 */
export function toolJson(result: unknown, status: WriteStatus | null = null): string {
  const value =
    status && result !== null && typeof result === 'object' && !Array.isArray(result)
      ? { ...result, ...status }
      : result;
  return JSON.stringify(value).replace(
    UNSAFE_IN_JSON,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Line separators and the bidi controls (embeddings, overrides, isolates, marks). */
const UNSAFE_IN_JSON = /[\u0085\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The in-progress task this actor holds, if any (what presence says it is on). */
function activeTask(plan: Plan): string | null {
  return plan.list({ assignee: plan.actor, status: 'in_progress' })[0]?.id ?? null;
}
