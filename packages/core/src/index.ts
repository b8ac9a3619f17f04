/**
 * @cairn/core: a shared, live task plan for AI agents and people, held in a Yjs document.
 *
 * The root entry is platform-neutral (browser, Node, Deno, Bun, Workers). Storage and sync adapters live in
 * subpath exports: `@cairn/core/fs`, `@cairn/core/indexeddb`, `@cairn/core/websocket`.
 *
 * Tools for models: `createToolkit(plan, { actor, families })` (docs/TOOLS.md). Context text: `renderPlan`,
 * `renderDelta` and `resolveContext`. The plan's conversation: `createChat(doc, { actor })` (docs/SCHEMA.md, "Chat").
 */

export type { HttpToolkit, HttpToolkitOptions } from './agents/http.js';
export { createHttpToolkit } from './agents/http.js';
export type {
  AgentSession,
  AgentSessionOptions,
  AgentSource,
  AgentTool,
  AgentToolkit,
  ContextSource,
  PreparedCall,
  ToolOutcome,
} from './agents/session.js';
export { createAgentSession, DEFAULT_INSTRUCTIONS, FAMILY_FORMATS } from './agents/session.js';
export type { ChangePoint, TaskDelta } from './changes.js';
export { changesSince } from './changes.js';
export type {
  ChatChangeEvent,
  ChatEntry,
  ChatInput,
  ChatOptions,
  ChatRole,
  ChatToolCall,
} from './chat.js';
export { CHAT_KEY, CHAT_LIMITS, CHAT_ROLES, Chat, createChat } from './chat.js';
export type {
  ClaimArbiter,
  ClaimDecision,
  ClaimHost,
  ClaimNextFilter,
  ClaimOperation,
  ClaimOutcome,
  ClaimRequestOperation,
  ClaimResult,
} from './claims.js';
export { claimRule, isClaimCandidate, LocalArbiter } from './claims.js';
export { cursorFromStateVector, cursorKnown, cursorOf, readCursor } from './cursor.js';
export type { MalformedEntry } from './doc.js';
export type { CairnErrorJSON, ErrorCode } from './errors.js';
export { CairnError, ERROR_CODES, isCairnError, toCairnError } from './errors.js';
export { collectChanges } from './events.js';
export type { StoredPlan } from './first-read.js';
export type { BlockedInfo, BlockReason, GraphNode } from './graph.js';
export { analyzeGraph, findCycles, satisfiesDependency } from './graph.js';
export type { LearnedContext } from './learning/context.js';
export { learnedProcedures } from './learning/context.js';
export type { TraceSample } from './learning/distill.js';
export { offlineDistill } from './learning/distill.js';
export { assertPlanDocId, isPlanDocId, ownerOfDerivedDoc } from './learning/documents.js';
export { knownTools, learnableCalls } from './learning/known-tools.js';
export type { LearnInput, SkillChange } from './learning/library.js';
export {
  learnSkill,
  readChanges,
  readSkill,
  readSkills,
  recordSkillOutcome,
  requireSkill,
  SKILL_CHANGES,
  SKILL_KEYS,
  SKILL_LIMITS,
  SKILLS_SUFFIX,
  sameProcedure,
  scopeOf,
  scopeOfSkillsDoc,
  setSkillStatus,
  skillsDocId,
} from './learning/library.js';
export { contentWords, matchSkills, renderLearnedProcedures, renderSkill } from './learning/match.js';
export { argumentShape, shapeText } from './learning/shape.js';
export type {
  Skill,
  SkillAuthor,
  SkillDraft,
  SkillPitfall,
  SkillStats,
  SkillStatus,
  SkillStep,
  SkillVersion,
} from './learning/skill.js';
export {
  currentVersion,
  parseSkillDraft,
  SKILL_DRAFT_SHAPE,
  SKILL_FORMAT,
  SKILL_STATUSES,
  SkillDraftSchema,
  SkillSchema,
  successRate,
} from './learning/skill.js';
export { LEARNED_PROCEDURE_TOOL, learnedProcedureTool } from './learning/tool.js';
export type { SkillOffer, TraceBound, TraceCall } from './learning/traces.js';
export {
  callsForTask,
  clearOffer,
  DEFAULT_TRACE_BOUND,
  MAX_TRACE_ARGS_CHARS,
  planOfTraceDoc,
  readCalls,
  readOffer,
  recordCall,
  recordOffer,
  TRACE_KEYS,
  TRACE_SUFFIX,
  TraceCallSchema,
  traceDocId,
  traceRecorder,
  trimTrace,
} from './learning/traces.js';
export type { TransactionOrigin } from './origins.js';
export { readOrigin, registerOrigin } from './origins.js';
export type { ByteLock, ByteStorageAdapter, RecordKey, StoredRecord } from './persistence/adapter.js';
export type {
  BlockedTask,
  CreatePlanOptions,
  PlanChangeEvent,
  PlanSnapshot,
  TaskChange,
  TaskUpdate,
} from './plan.js';
export { createPlan, localArbiterOf, Plan, UNDO_LIMIT } from './plan.js';
export type { ListItem, ReconcileOptions, ReconcileResult } from './reconcile.js';
export { reconcileList } from './reconcile.js';
export type { BudgetOptions, DonePolicy } from './render/budget.js';
export type { ContextFeed, ContextFeedOptions, ContextTurn } from './render/context-feed.js';
export { createContextFeed } from './render/context-feed.js';
export type { DeltaOptions } from './render/delta.js';
export { renderDelta } from './render/delta.js';
export type { RenderFormat, RenderOptions } from './render/index.js';
export { RENDER_FORMATS, renderPlan } from './render/index.js';
export type { ChatMessage, ContextOptions, ContextSection, Identity } from './render/template.js';
export {
  CONTEXT_ALIASES,
  CONTEXT_VARIABLES,
  ContextTemplateSchema,
  resolveContext,
} from './render/template.js';
export type { Tokenizer } from './render/tokenizer.js';
export { approximateTokenizer, defaultTokenizer } from './render/tokenizer.js';
export {
  escapeUnseenInJson,
  inline,
  type Presence,
  RENDER_CLOCK_STEP_MS,
  renderClock,
} from './render/view.js';
export type {
  Actor,
  ClosedStatus,
  Json,
  ListFilter,
  MoveTarget,
  OpenStatus,
  PlanLimits,
  Status,
  TaskInput,
  TaskPatch,
  TaskSnapshot,
} from './schema.js';
export {
  ActorSchema,
  actorFor,
  CLOSED_STATUSES,
  DOC_KEYS,
  isOpenStatus,
  isPrincipalActor,
  isWaitingStatus,
  ListFilterSchema,
  MoveSchema,
  OPEN_STATUSES,
  PLAN_LIMITS,
  PrincipalActorSchema,
  SCHEMA_VERSION,
  STATUSES,
  StatusSchema,
  TaskInputSchema,
  TaskPatchSchema,
  TEXT_LIMITS,
  WAITING_STATUSES,
} from './schema.js';
export type { SearchHit, SearchOptions } from './search.js';
export { searchTasks, searchWords } from './search.js';
export { SINCE_LAST_CALL_TOKENS, sinceLastCall, sinceLastCallFeed } from './since-last-call.js';
export type { SkippedStep } from './skipped-steps.js';
export { watchSkippedSteps } from './skipped-steps.js';
export type { DecodedSnapshot, SnapshotAhead } from './snapshot.js';
// For a store written elsewhere (the server's SQLite store in a Durable Object): the same checksum and snapshot.
export { crc32, decodeSnapshot, encodeSnapshot, snapshotAhead } from './snapshot.js';
export type { DocPersistence, OpenPersistence } from './storage.js';
export type { TaskNumbers } from './task-numbers.js';
export { taskNumbers } from './task-numbers.js';
export { CAIRN_COMPACT_TOOLS } from './tools/cairn-compact.js';
export type {
  AnthropicToolDefinition,
  DefinitionFormat,
  DefinitionsByFormat,
  JsonSchemaObject,
  McpToolDefinition,
  OpenAIToolDefinition,
  ToolDefinition,
} from './tools/definitions.js';
export { DEFINITION_FORMATS, describeShape, toDefinition, toolJsonSchema } from './tools/definitions.js';
export type { ToolCallObserver, ToolCallRecord } from './tools/observe.js';
export type { FamilyName, ToolAnnotations, ToolContext, ToolFamily, ToolSpec } from './tools/tool.js';
export { defineTool, FAMILY_NAMES } from './tools/tool.js';
export type { ToolError, Toolkit, ToolkitOptions, ToolResult } from './tools/toolkit.js';
export { createToolkit, FAMILIES, isToolError } from './tools/toolkit.js';
