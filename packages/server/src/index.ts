/**
 * @cairn/server: the Node sync server of Cairn plans.
 *
 * - `createCairnServer(options)` runs the whole thing on node:http + ws (what `cairn serve` runs).
 * - `SyncHub` is the transport-agnostic core (rooms, auth decisions, awareness relay, limits), for another host:
 *   feed it sockets with `authorize` + `connect`. Features are `Extension`s added with `hub.use` (decision 015):
 *   the store, claims (`ClaimArbiterService`), wake-ups and auto-close among them.
 * - `PlanStore` is the storage contract; `DiskStore` (append logs) and `MemoryStore` implement it.
 * - The plan API (`registerPlanRoutes`), wake-ups (`WakeSweeper`, event `task_woken`) and auto-close
 *   (`AutoCloser` with a pluggable `Judge`, e.g. `chatCompletionsJudge`): docs/PROTOCOL.md, decisions/008.
 * - Learning (`Learner`: traces, skills distilled by a `Distiller` or offline): decisions/020.
 */

export { splitGoal } from './agents/goal.js';
export type { LlmOptions } from './agents/llm.js';
export { llmFromEnv } from './agents/llm.js';
export type { AgentEvent, AgentEventType, AgentsOptions, AgentsReport } from './agents.js';
export { defaultActors, runAgents } from './agents.js';
export type { AgentsCliIO } from './agents-cli.js';
export { AGENTS_USAGE, runAgentsCli } from './agents-cli.js';
export type { Authenticator, Grant, Role, TokenClaims } from './auth.js';
export {
  createAuthenticator,
  MIN_SECRET_BYTES,
  planMatches,
  ROLES,
  roleAllows,
  scopeCovered,
  signToken,
} from './auth.js';
export type {
  AutoCloseEvents,
  AutoCloseOptions,
  ChatCompletionsJudgeOptions,
  Judge,
  JudgeExchange,
  JudgeRequest,
  JudgeRun,
  JudgeTask,
  TaskJudgement,
} from './extensions/auto-close.js';
export {
  AutoCloser,
  chatCompletionsJudge,
  judgeFromEnv,
  latestExchange,
  parseJudgements,
} from './extensions/auto-close.js';
export type {
  ClaimHost,
  ClaimOptions,
  ClaimReservations,
  ExpiredLease,
  Lease,
  Reservation,
} from './extensions/claims.js';
export { actorsOfSubject, ClaimArbiterService, mayActAs } from './extensions/claims.js';
export { withLearningAccess } from './extensions/learning/access.js';
export type { Distiller, DistillMaterial } from './extensions/learning/distiller.js';
export {
  chatCompletionsDistiller,
  distillerFromEnv,
  distillRequest,
  PROSE_SHAPE,
  withProse,
} from './extensions/learning/distiller.js';
export type {
  DistillJob,
  DistillResult,
  LearnedEvent,
  LearningEvents,
  LearningOptions,
  OutcomeEvent,
} from './extensions/learning/learner.js';
export { DistillJobSchema, Learner } from './extensions/learning/learner.js';
export type { LearningRoutesOptions } from './extensions/learning/routes.js';
export { registerLearningRoutes, skillView } from './extensions/learning/routes.js';
export type { SharedLearningQueue } from './extensions/learning/shared-queue.js';
export type { TaskWokenEvent, WakeEntry, WakeEvents, WakeOptions } from './extensions/wake.js';
export { WakeSweeper, wakeNotice } from './extensions/wake.js';
export type { HttpAppOptions, ReadJsonOptions } from './http/app.js';
export {
  bearerToken,
  createHttpApp,
  errorResponse,
  jsonResponse,
  readJson,
  STATUS_BY_CODE,
  textResponse,
} from './http/app.js';
export type { OriginOptions } from './http/origin.js';
export { isLoopback } from './http/origin.js';
export type { PlanRoutesOptions } from './http/plans.js';
export { registerPlanRoutes, TASK_LIST_LIMIT } from './http/plans.js';
export type { HttpRateLimits } from './http/rate-limit.js';
export { DEFAULT_HTTP_RATE_LIMITS } from './http/rate-limit.js';
export { authorizeRequest, registerCoreRoutes } from './http/routes.js';
export { serveStatic } from './http/static.js';
export type { Connection, HubConnection, HubSocket } from './hub/connection.js';
export type { DueRun, QueueOptions, Scheduler } from './hub/due-times.js';
export { DueQueue, DueTimes, timerScheduler } from './hub/due-times.js';
export type {
  AuthRequest,
  Extension,
  ExtensionHost,
  LoadingRoom,
  PlanHandle,
  PlanRoom,
  RoomChange,
  RoomConnection,
  RoomMessage,
} from './hub/extension.js';
export type { AuthDecision, CairnMessageHandler, HubOptions } from './hub/hub.js';
export { SyncHub } from './hub/hub.js';
export type { Limits } from './hub/limits.js';
export { DEFAULT_LIMITS } from './hub/limits.js';
export type { TaskChangeSubscription } from './hub/task-changes.js';
export type { IndexFile } from './index-file.js';
export type { LogFields, Logger } from './log.js';
export { createConsoleLogger, silentLogger } from './log.js';
export type { MetricsRegistryOptions } from './metrics.js';
export { MetricsRegistry } from './metrics.js';
export type { ModelProxyOptions } from './model-proxy.js';
export { modelProxyFromEnv, registerModelRoutes } from './model-proxy.js';
export type { CairnServer, CairnServerOptions, ListenInfo } from './node-host.js';
export { createCairnServer, upgradeToken } from './node-host.js';
export { nodeProcessMetrics } from './process-metrics.js';
export type { DiskStoreOptions } from './store/disk.js';
export { DiskStore } from './store/disk.js';
export { diskPlanExists, listDiskDocuments, listDiskPlans } from './store/disk-plans.js';
export { nodeIndexFile } from './store/index-file.js';
export type { MemoryStoreOptions } from './store/memory.js';
export { MemoryStore } from './store/memory.js';
export type { DamagedLog, PlanStore, StoreMetrics } from './store/store.js';
export { CloseCode, MessageType } from './wire.js';
