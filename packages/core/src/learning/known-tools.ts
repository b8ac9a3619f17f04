// Which calls of a trace a learned procedure may be made from. A trace is written by the plan's writers (through
// a toolkit, or as a raw Yjs write over WebSocket), and a skill made from it is read by every plan of the scope:
// so a call counts only when its tool exists and its arguments are ones that tool takes (decision 034).
import { CAIRN_COMPACT_TOOLS } from '../tools/cairn-compact.js';
import { FAMILIES } from '../tools/families.js';
import type { ToolSpec } from '../tools/tool.js';
import { readArguments } from '../tools/toolkit.js';
import { learnedProcedureTool } from './tool.js';
import type { TraceCall } from './traces.js';

/** The tools Cairn defines (every family, the compact set, the learned-procedure lookup), and `extra`, by name. */
export function knownTools(
  extra: ReadonlyArray<ToolSpec<unknown>> = [],
): ReadonlyMap<string, ToolSpec<unknown>> {
  const tools = new Map<string, ToolSpec<unknown>>();
  const all = [
    ...Object.values(FAMILIES).flatMap((family) => family.tools),
    ...CAIRN_COMPACT_TOOLS,
    learnedProcedureTool(() => []),
    ...extra,
  ];
  for (const tool of all) if (!tools.has(tool.name)) tools.set(tool.name, tool);
  return tools;
}

/**
 * The calls that name a known tool, in order. A call whose recorded arguments that tool would not take (an
 * unknown key, a wrong type; or arguments too large to keep, stored as their shape) keeps its place with no
 * arguments (`{}`), so no unchecked key reaches a skill.
 */
export function learnableCalls(
  calls: readonly TraceCall[],
  tools: ReadonlyMap<string, ToolSpec<unknown>>,
): TraceCall[] {
  const out: TraceCall[] = [];
  for (const call of calls) {
    const tool = tools.get(call.tool);
    if (!tool) continue;
    out.push(takes(tool, call.args) ? call : { ...call, args: {} });
  }
  return out;
}

function takes(tool: ToolSpec<unknown>, args: unknown): boolean {
  try {
    readArguments(tool, args);
    return true;
  } catch {
    return false;
  }
}
