/**
 * @cairn/server/hub: the sync hub and its extensions on Web-standard APIs only (Uint8Array, crypto.subtle,
 * Request/Response, a WebSocket-like `HubSocket`, an injected `Scheduler`), so a host on any runtime can run it: a
 * Durable Object, Deno, Bun, a test. No Node built-in is imported from here (a check in the tests bundles this entry
 * for `--platform=neutral`). The Node host (`createCairnServer`, the disk store, `ws`, node:http, the CLI, file logs
 * and Node's process metrics) is the package's root entry. Decisions 015 (extensions) and 040 (the scheduler).
 */

export type { Authenticator, Grant, Role, TokenClaims } from '../auth.js';
export { createAuthenticator, MIN_SECRET_BYTES, planMatches, ROLES, roleAllows, signToken } from '../auth.js';
export type { AutoCloseEvents, AutoCloseOptions, Judge, JudgeRun, TaskJudgement } from '../auto-close.js';
export { AutoCloser, chatCompletionsJudge, judgeFromEnv } from '../auto-close.js';
export type { ClaimOptions, ClaimReservations, Lease } from '../claims.js';
export { ClaimArbiterService } from '../claims.js';
export { createOnFirstWrite } from '../create-on-write.js';
export type { HttpAppOptions } from '../http/app.js';
export { createHttpApp, errorResponse, jsonResponse } from '../http/app.js';
export { registerContextTemplateRoute } from '../http/context-template.js';
export { registerConversationRoutes } from '../http/conversation.js';
export type { PlanRoutesOptions } from '../http/plans.js';
export { registerPlanRoutes } from '../http/plans.js';
export type { ServiceCheck } from '../http/routes.js';
export { authorizeRequest, registerCoreRoutes } from '../http/routes.js';
export type { IndexFile } from '../index-file.js';
export { withLearningAccess } from '../learning/access.js';
export type { Distiller } from '../learning/distiller.js';
export { chatCompletionsDistiller, distillerFromEnv } from '../learning/distiller.js';
export type { LearningOptions } from '../learning/learner.js';
export { Learner } from '../learning/learner.js';
export { registerLearningRoutes } from '../learning/routes.js';
export type { LogFields, Logger } from '../log.js';
export { createConsoleLogger, silentLogger } from '../log.js';
export type { MetricsRegistryOptions } from '../metrics.js';
export { MetricsRegistry } from '../metrics.js';
export { registerModelRoutes } from '../model-proxy.js';
export { MemoryStore } from '../store/memory.js';
export type { PlanStore } from '../store/store.js';
export type { WakeOptions } from '../wake.js';
export { WakeSweeper } from '../wake.js';
export { CloseCode, SUBPROTOCOL, SYNC_PATH_PREFIX, TOKEN_SUBPROTOCOL_PREFIX } from '../wire.js';
export type { HubConnection, HubSocket } from './connection.js';
export type { Scheduler } from './due-times.js';
export { DueQueue, DueTimes, timerScheduler } from './due-times.js';
export type { Extension, ExtensionHost, PlanHandle, PlanRoom } from './extension.js';
export type { AuthDecision, HubOptions } from './hub.js';
export { SyncHub } from './hub.js';
export type { Limits } from './limits.js';
export type { TaskChangeSubscription, TaskFieldChange } from './task-changes.js';
