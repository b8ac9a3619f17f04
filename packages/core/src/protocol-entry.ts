/**
 * @cairn/core/protocol: what `@cairn/server` and other implementations of Cairn's protocol share with the client:
 * the wire codecs (docs/PROTOCOL.md), transaction origins, the claims arbiter and its rule, cursors, document keys,
 * the zod schemas of the document and of tool arguments, and the tool machinery under the toolkit. Not for apps:
 * an app imports from `@cairn/core`; these names follow the protocol and may change with it.
 *
 * @packageDocumentation
 */

export type {
  AgentSource,
  AgentTool,
  AgentToolkit,
  ContextSource,
  PreparedCall,
  ToolOutcome,
} from './agents/session.js';
export { DEFAULT_INSTRUCTIONS } from './agents/session.js';
export { type ChangedTask, changedTasks } from './change-events.js';
export type { ChangePoint, TaskDelta } from './changes-since.js';
export { changesSince } from './changes-since.js';
export type { ChatChangeEvent, ChatRole, ChatToolCall } from './chat.js';
export { CHAT_KEY, CHAT_LIMITS, CHAT_ROLES } from './chat.js';
export type {
  ClaimArbiter,
  ClaimDecision,
  ClaimNextFilter,
  ClaimOperation,
  ClaimOutcome,
  ClaimRequestOperation,
  ClaimResult,
  LocalArbiterHost,
} from './claims.js';
export { claimRule, isClaimCandidate, LocalArbiter } from './claims.js';
export * from './claims-protocol.js';
export { cursorFromStateVector, cursorKnown, cursorOf, readCursor } from './cursor.js';
export type { MalformedEntry } from './doc.js';
export type { CairnErrorJSON } from './errors.js';
export { ERROR_CODES, toCairnError } from './errors.js';
export type { StoredPlan } from './first-read.js';
export type { BlockedInfo, BlockReason, GraphNode } from './graph.js';
export { analyzeGraph, findCycles, satisfiesDependency } from './graph.js';
export type { TransactionOrigin } from './origins.js';
export { readOrigin, registerOrigin, remoteOrigin } from './origins.js';
export type { ByteLock, ByteStorageAdapter, RecordKey, StoredRecord } from './persistence/adapter.js';
export type { MemoryByteAdapter } from './persistence/memory-adapter.js';
export { memoryByteAdapter } from './persistence/memory-adapter.js';
export type { CompactionPolicy, LogSize } from './persistence/policy.js';
export { Backoff, compactAfterRecords, policyWantsCompaction } from './persistence/policy.js';
export type {
  ImmediateByteAdapter,
  MergedRecords,
  MergingByteAdapter,
  StoredLogError,
  StoredLogOptions,
} from './persistence/stored-log.js';
export { currentSnapshot, StoredLog } from './persistence/stored-log.js';
export { localArbiterOf, UNDO_LIMIT } from './plan.js';
export * from './protocol.js';
export type { ListItem, ReconcileOptions, ReconcileResult } from './reconcile.js';
export { reconcileList } from './reconcile.js';
export type { BudgetOptions, DonePolicy } from './render/budget.js';
export type { ChangesOrWholeOptions, ContextKind } from './render/changes-or-whole.js';
export { CURSOR_NOTES, changesOrWhole } from './render/changes-or-whole.js';
export type { ContextSection, Identity } from './render/template.js';
export { CONTEXT_ALIASES, CONTEXT_VARIABLES, ContextTemplateSchema } from './render/template.js';
export { approximateTokenizer, defaultTokenizer } from './render/tokenizer.js';
export type { Presence } from './render/view.js';
export { escapeUnseenInJson, inline, RENDER_CLOCK_STEP_MS, renderClock } from './render/view.js';
export type { ClosedStatus, Json, OpenStatus, PlanLimits } from './schema.js';
export {
  ActorSchema,
  actorFor,
  CLOSED_STATUSES,
  DOC_KEYS,
  isPrincipalActor,
  isWaitingStatus,
  ListFilterSchema,
  MoveSchema,
  OPEN_STATUSES,
  PLAN_LIMITS,
  PrincipalActorSchema,
  SCHEMA_VERSION,
  StatusSchema,
  TaskInputSchema,
  TaskPatchSchema,
  TEXT_LIMITS,
  WAITING_STATUSES,
} from './schema.js';
export type { SearchHit, SearchOptions } from './search.js';
export { searchTasks, searchWords } from './search.js';
export { SINCE_LAST_CALL_TOKENS, sinceLastCallFeed } from './since-last-call.js';
export type { SkippedStep } from './skipped-steps.js';
export { watchSkippedSteps } from './skipped-steps.js';
export type { DecodedSnapshot, SnapshotAhead } from './snapshot.js';
// For a store written elsewhere (the server's SQLite store in a Durable Object): the same checksum and snapshot.
export { crc32, decodeSnapshot, encodeSnapshot, snapshotAhead } from './snapshot.js';
export type { DocPersistence, OpenPersistence } from './storage.js';
export type { TaskNumbers } from './task-numbers.js';
export { taskNumbers } from './task-numbers.js';
export type { Numbering } from './tools/aliases.js';
export { CAIRN_COMPACT_TOOLS } from './tools/cairn-compact.js';
export type {
  AnthropicToolDefinition,
  DefinitionsByFormat,
  JsonSchemaObject,
  McpToolDefinition,
  OpenAIToolDefinition,
} from './tools/definitions.js';
export { DEFINITION_FORMATS, describeShape, toDefinition, toolJsonSchema } from './tools/definitions.js';
export { FAMILIES } from './tools/families.js';
export { defineTool } from './tools/json-schema.js';
export type { ToolCallObserver, ToolCallRecord } from './tools/observe.js';
export type { ToolAnnotations, ToolContext, ToolFamily, ToolSpec } from './tools/tool.js';
export type { DescribeOptions, IssueText } from './validate.js';
export { describeIssues } from './validate.js';
