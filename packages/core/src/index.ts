/**
 * @cairn/core: a shared, live task plan for AI agents and people, held in a Yjs document.
 *
 * The root entry is platform-neutral (browser, Node, Deno, Bun, Workers). Storage and sync adapters live in
 * subpath exports: `@cairn/core/fs`, `@cairn/core/indexeddb`, `@cairn/core/websocket`.
 */

export type { ClaimArbiter, ClaimNextFilter, ClaimOutcome, ClaimResult } from './claims.js';
export type { CairnErrorJSON, ErrorCode } from './errors.js';
export { CairnError, ERROR_CODES, isCairnError, toCairnError } from './errors.js';
export type { BlockedInfo, BlockReason, GraphNode } from './graph.js';
export { analyzeGraph, findCycles, satisfiesDependency } from './graph.js';
export type { BlockedTask, CreatePlanOptions, PlanChangeEvent, PlanSnapshot, TaskChange } from './plan.js';
export { createPlan, Plan } from './plan.js';
export type {
  Actor,
  ClosedStatus,
  Json,
  ListFilter,
  MoveTarget,
  OpenStatus,
  Status,
  TaskInput,
  TaskPatch,
  TaskSnapshot,
} from './schema.js';
export {
  ActorSchema,
  CLOSED_STATUSES,
  DOC_KEYS,
  isOpenStatus,
  isWaitingStatus,
  ListFilterSchema,
  MoveSchema,
  OPEN_STATUSES,
  SCHEMA_VERSION,
  STATUSES,
  StatusSchema,
  TaskInputSchema,
  TaskPatchSchema,
  WAITING_STATUSES,
} from './schema.js';
export type { DocPersistence, OpenPersistence } from './storage.js';
