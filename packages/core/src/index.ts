/**
 * @cairn/core: a shared, live task plan for AI agents and people, held in a Yjs document.
 *
 * The root entry is what an app needs, and platform-neutral (browser, Node, Deno, Bun, Workers): create or open a
 * plan (`createPlan`), edit and read it (`Plan`), give a model its tools (`createToolkit`, docs/TOOLS.md), its
 * context text (`renderPlan`, `renderDelta`, `resolveContext`, `createContextFeed`), and the plan's conversation
 * (`createChat`, docs/SCHEMA.md, "Chat"). Storage and sync live in subpath exports: `@cairn/core/fs`,
 * `@cairn/core/indexeddb`, `@cairn/core/websocket`. Learned procedures are in `@cairn/core/learning`; what a server
 * or another implementation of the protocol needs (wire codecs, origins, arbiter, cursors, document keys, schemas)
 * is in `@cairn/core/protocol`.
 *
 * @packageDocumentation
 */

export type { HttpToolkit, HttpToolkitOptions } from './agents/http.js';
export { createHttpToolkit } from './agents/http.js';
export type { AgentSession, AgentSessionOptions } from './agents/session.js';
export { createAgentSession, FAMILY_FORMATS } from './agents/session.js';
export type { ChatEntry, ChatInput, ChatOptions } from './chat.js';
export { Chat, createChat } from './chat.js';
export type { ErrorCode } from './errors.js';
export { CairnError, isCairnError } from './errors.js';
export type {
  BlockedTask,
  CreatePlanOptions,
  PlanChangeEvent,
  PlanSnapshot,
  TaskChange,
  TaskUpdate,
} from './plan.js';
export { createPlan, Plan } from './plan.js';
export type { ContextFeed, ContextFeedOptions, ContextTurn } from './render/context-feed.js';
export { createContextFeed } from './render/context-feed.js';
export type { DeltaOptions } from './render/delta.js';
export { renderDelta } from './render/delta.js';
export type { RenderFormat, RenderOptions } from './render/render-plan.js';
export { RENDER_FORMATS, renderPlan } from './render/render-plan.js';
export type { ChatMessage, ContextOptions } from './render/template.js';
export { resolveContext } from './render/template.js';
export type { Tokenizer } from './render/tokenizer.js';
export type { Actor, ListFilter, MoveTarget, Status, TaskInput, TaskPatch, TaskSnapshot } from './schema.js';
export { isOpenStatus, STATUSES } from './schema.js';
export { sinceLastCall } from './since-last-call.js';
export { setText } from './text.js';
export type { DefinitionFormat, ToolDefinition } from './tools/definitions.js';
export { createToolkit } from './tools/families.js';
export type { FamilyName } from './tools/tool.js';
export { FAMILY_NAMES } from './tools/tool.js';
export type { ToolError, Toolkit, ToolkitOptions, ToolResult } from './tools/toolkit.js';
export { isToolError } from './tools/toolkit.js';
