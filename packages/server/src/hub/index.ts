/**
 * @cairn/server/hub: the sync hub and its extensions on Web-standard APIs only (Uint8Array, crypto.subtle,
 * Request/Response, a WebSocket-like `HubSocket`, an injected `Scheduler`), so a host on any runtime can run it: a
 * Durable Object, Deno, Bun, a test. No Node built-in is imported from here (a check in the tests bundles this entry
 * for `--platform=neutral`). The Node host (`createCairnServer`, the disk store, `ws`, node:http, the CLI, file logs
 * and Node's process metrics) is the package's root entry. Decisions 015 (extensions) and 040 (the scheduler).
 */

export type { Authenticator, Grant, Role, TokenClaims } from '../auth.js';
export { createAuthenticator, MIN_SECRET_BYTES, planMatches, ROLES, roleAllows, signToken } from '../auth.js';
export { createOnFirstWrite } from '../create-on-write.js';
export type {
  AutoCloseEvents,
  AutoCloseOptions,
  Judge,
  JudgeRun,
  TaskJudgement,
} from '../extensions/auto-close.js';
export { AutoCloser, chatCompletionsJudge, judgeFromEnv } from '../extensions/auto-close.js';
export type { ClaimOptions, ClaimReservations, Lease } from '../extensions/claims.js';
export { ClaimArbiterService } from '../extensions/claims.js';
export { withLearningAccess } from '../extensions/learning/access.js';
export type { Distiller } from '../extensions/learning/distiller.js';
export { chatCompletionsDistiller, distillerFromEnv } from '../extensions/learning/distiller.js';
export type { LearningOptions } from '../extensions/learning/learner.js';
export { Learner } from '../extensions/learning/learner.js';
export { registerLearningRoutes } from '../extensions/learning/routes.js';
export type { WakeOptions } from '../extensions/wake.js';
export { WakeSweeper } from '../extensions/wake.js';
export type { HttpAppOptions } from '../http/app.js';
export { createHttpApp, errorResponse, jsonResponse } from '../http/app.js';
export { registerContextTemplateRoute } from '../http/context-template.js';
export { registerConversationRoutes } from '../http/conversation.js';
export type { PlanRoutesOptions } from '../http/plans.js';
export { registerPlanRoutes } from '../http/plans.js';
export type { ServiceCheck } from '../http/routes.js';
export { authorizeRequest, registerCoreRoutes } from '../http/routes.js';
export type { IndexFile } from '../index-file.js';
export type { LogFields, Logger } from '../log.js';
export { createConsoleLogger, silentLogger } from '../log.js';
export type { MetricsRegistryOptions } from '../metrics.js';
export { MetricsRegistry } from '../metrics.js';
export { registerModelRoutes } from '../model-proxy.js';
export { MemoryStore } from '../store/memory.js';
export type { PlanStore } from '../store/store.js';
export { CloseCode, SUBPROTOCOL, SYNC_PATH_PREFIX, TOKEN_SUBPROTOCOL_PREFIX } from '../wire.js';
export type { HubConnection, HubSocket } from './connection.js';
export type { Scheduler } from './due-times.js';
export { DueQueue, DueTimes, timerScheduler } from './due-times.js';
export type { Extension, ExtensionHost, PlanHandle, PlanRoom } from './extension.js';
export type { AuthDecision, HubOptions } from './hub.js';
export { SyncHub } from './hub.js';
export type { Limits } from './limits.js';
export type { TaskChangeSubscription } from './task-changes.js';
