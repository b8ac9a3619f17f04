/**
 * @cairn/mcp: an MCP server exposing Cairn's task tools on a live plan.
 *
 * - `runMcpCli(args, io)` is `cairn mcp` (stdio).
 * - `createCairnMcpServer({ plan, planId })` wires tools and the plan resource onto an MCP `Server`, for any
 *   transport.
 * - `openLivePlan({ planId, actor, server | dataDir, outbox })` opens a plan synced through a Cairn server (claims
 *   arbitrated there, edits kept in a local outbox until the server has stored them) or on disk.
 */

export type { McpCliIO, McpCliOptions } from './cli.js';
export { defaultActor, MCP_USAGE, parseMcpArgs, runMcpCli } from './cli.js';
export type { CloseOptions, LivePlan, LivePlanOptions, WriteStatus } from './live-plan.js';
export { openLivePlan } from './live-plan.js';
export type { CairnMcpOptions, CairnMcpServer } from './server.js';
export { createCairnMcpServer, planResourceUri } from './server.js';
export type { LineTransportOptions } from './stdio.js';
export { DEFAULT_MAX_MESSAGE_BYTES, LineTransport } from './stdio.js';
