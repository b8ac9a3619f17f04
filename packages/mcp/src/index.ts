/**
 * @cairn/mcp: an MCP server exposing Cairn's task tools on a live plan.
 *
 * - `runMcpCli(args, io)` is `cairn mcp` (stdio).
 * - `createCairnMcpServer({ plan, planId })` wires tools and the plan resource onto an MCP `Server`, for any
 *   transport.
 * - `openLivePlan({ planId, actor, server | dataDir })` opens a plan synced through a Cairn server (claims
 *   arbitrated there) or on disk.
 */

export type { McpCliIO, McpCliOptions } from './cli.js';
export { defaultActor, MCP_USAGE, parseMcpArgs, runMcpCli } from './cli.js';
export type { LivePlan, LivePlanOptions } from './live-plan.js';
export { openLivePlan } from './live-plan.js';
export type { CairnMcpOptions, CairnMcpServer } from './server.js';
export { createCairnMcpServer, planResourceUri } from './server.js';
