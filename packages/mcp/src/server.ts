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
  traceRecorder,
} from '@cairn/core';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
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
import type * as Y from 'yjs';

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
  /** Notifications are sent at most this often. Default 50 ms. */
  notifyDelayMs?: number;
  /** The plan's trace document: each tool call is recorded there (learned procedures). */
  traces?: Y.Doc | null;
  /** The scope's learned skills: `get_learned_procedure` is offered when given. */
  skills?: Y.Doc | null;
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
  const toolkit = createToolkit(plan, {
    families: options.families ?? ['cairn'],
    ...(options.traces ? { onCall: traceRecorder(options.traces) } : {}),
    ...(options.skills ? { extraTools: [learnedProcedureTool(() => readSkills(options.skills!))] } : {}),
  });
  const uri = planResourceUri(planId);
  const server = new Server(
    { name: 'cairn', title: 'Cairn shared plan', version: VERSION },
    {
      capabilities: { tools: {}, resources: { subscribe: true } },
      instructions:
        `A task plan shared live with other agents and people (plan "${planId}", you are ${plan.actor}). ` +
        'Claim a task (claim, claim_next) before working on it, so no two agents do the same work; mark it done ' +
        `with update_tasks. The resource ${uri} is the current plan; subscribe to hear when others change it.`,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolkit.definitions('mcp') }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const result = await toolkit.dispatch(request.params.name, request.params.arguments ?? {});
    options.onActiveTask?.(activeTask(plan));
    return {
      content: [{ type: 'text' as const, text: JSON.stringify(result) }],
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
      await server.close();
    },
  };
}

function requireUri(asked: string, uri: string): void {
  if (asked !== uri) {
    throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${asked}; this server has ${uri}.`);
  }
}

/** The in-progress task this actor holds, if any (what presence says it is on). */
function activeTask(plan: Plan): string | null {
  return plan.list({ assignee: plan.actor, status: 'in_progress' })[0]?.id ?? null;
}
