/**
 * @cairn/server: the Node sync server of Cairn plans.
 *
 * - `createCairnServer(options)` runs the whole thing on node:http + ws (what `cairn serve` runs).
 * - `SyncHub` is the transport-agnostic core (rooms, auth decisions, persistence, awareness relay, limits), for
 *   another host: feed it sockets with `authorize` + `connect`.
 * - `PlanStore` is the storage contract; `DiskStore` (append logs) and `MemoryStore` implement it.
 */

export { splitGoal } from './agents/goal.js';
export type { LlmOptions } from './agents/llm.js';
export { llmFromEnv } from './agents/llm.js';
export type { AgentEvent, AgentEventType, AgentsOptions, AgentsReport } from './agents.js';
export { defaultActors, runAgents } from './agents.js';
export type { AgentsCliIO } from './agents-cli.js';
export { AGENTS_USAGE, runAgentsCli } from './agents-cli.js';
export type { Authenticator, Grant, Role, TokenClaims } from './auth.js';
export { createAuthenticator, MIN_SECRET_BYTES, planMatches, ROLES, roleAllows, signToken } from './auth.js';
export type { ClaimHost, ClaimOptions, Lease } from './claims.js';
export { actorsOfSubject, ClaimArbiterService, installClaims, mayActAs } from './claims.js';
export type { Handler, RequestContext } from './http/router.js';
export { bearerToken, Router, readJson, STATUS_BY_CODE, sendError, sendJson } from './http/router.js';
export { authorizeRequest, registerCoreRoutes } from './http/routes.js';
export { serveStatic } from './http/static.js';
export type { Connection, HubConnection, HubSocket } from './hub/connection.js';
export type { AuthDecision, HubOptions, PlanHandle } from './hub/hub.js';
export { SyncHub } from './hub/hub.js';
export type { Limits } from './hub/limits.js';
export { DEFAULT_LIMITS } from './hub/limits.js';
export type { CairnMessageHandler, Room } from './hub/room.js';
export type { LogFields, Logger } from './log.js';
export { createConsoleLogger, silentLogger } from './log.js';
export { MetricsRegistry } from './metrics.js';
export type { CairnServer, CairnServerOptions, ListenInfo } from './node-host.js';
export { createCairnServer, isLoopback, upgradeToken } from './node-host.js';
export type { DiskStoreOptions } from './store/disk.js';
export { DiskStore } from './store/disk.js';
export type { MemoryStoreOptions } from './store/memory.js';
export { MemoryStore } from './store/memory.js';
export type { PlanStore, StoreMetrics } from './store/store.js';
export { CloseCode, MessageType } from './wire.js';
