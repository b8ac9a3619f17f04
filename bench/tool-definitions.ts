// Benchmark 9: what each tool family's definitions cost a model on every call, in cl100k tokens, in the three
// shapes clients send them (OpenAI chat completions, Anthropic, MCP tools/list), against the same tools with
// their arguments' JSON Schema exactly as zod emits it (size limits, patterns and integer bounds included).

import { createPlan, createToolkit, FAMILY_NAMES } from '@cairn/core';
import { CAIRN_COMPACT_TOOLS, DEFINITION_FORMATS, type ToolSpec } from '@cairn/core/protocol';
import { cl100kTokenizer } from '@cairn/core/tokenizer';
// zod is @cairn/core's dependency, not the workspace root's: the bench takes the copy core runs with.
import * as z from '../packages/core/node_modules/zod/mini/index.js';
import { FAMILIES } from '../packages/core/src/tools/families.js';
import { type BenchOptions, type BenchOutcome, count, type Row } from './lib/report.js';

/** The OpenAI shape of a tool, with its arguments' schema as zod emits it (less `$schema`). */
function unedited(tool: ToolSpec<unknown>) {
  const { $schema: _, ...parameters } = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' });
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

const tokens = (value: unknown) => cl100kTokenizer.count(JSON.stringify(value));
const int = (n: number) => n.toLocaleString('en-US');
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

export async function run(_options: BenchOptions): Promise<BenchOutcome> {
  const rows: Row[] = [];
  for (const family of FAMILY_NAMES) {
    const toolkit = createToolkit(createPlan(), { families: [family] });
    try {
      const sizes = Object.fromEntries(
        DEFINITION_FORMATS.map((format) => [format, tokens(toolkit.definitions(format))]),
      );
      const raw = tokens(FAMILIES[family].tools.map(unedited));
      const descriptions = cl100kTokenizer.count(
        toolkit
          .definitions('openai')
          .map((d) => d.function.description)
          .join('\n'),
      );
      rows.push({
        measure: `Definitions of the ${family} family (${toolkit.names.length} tool${toolkit.names.length === 1 ? '' : 's'}), OpenAI shape; Anthropic ${int(sizes['anthropic']!)}, MCP ${int(sizes['mcp']!)}; of which tool descriptions ${int(descriptions)}`,
        cairn: count(sizes['openai']!, 'tokens'),
        baselineName: 'the same tools, schemas as zod emits them',
        baseline: count(raw, 'tokens'),
        ratio: pct(sizes['openai']! / raw),
        target: '',
        met: null,
      });
    } finally {
      toolkit.destroy();
    }
  }
  const native = createToolkit(createPlan(), { families: ['cairn'] });
  const compact = createToolkit(createPlan(), { families: [], extraTools: CAIRN_COMPACT_TOOLS });
  for (const format of DEFINITION_FORMATS) {
    const small = tokens(compact.definitions(format));
    const full = tokens(native.definitions(format));
    rows.push({
      measure: `Compact variant of the native family (${compact.names.join(', ')}), ${format} shape`,
      cairn: count(small, 'tokens'),
      baselineName: `the native family's ${native.names.length} tools`,
      baseline: count(full, 'tokens'),
      ratio: pct(small / full),
      target: '',
      met: null,
    });
  }
  native.destroy();
  compact.destroy();
  return {
    id: 'tool-definitions',
    number: 9,
    title: 'Tool definitions: what each family costs a model per call',
    method:
      'Each family alone in a toolkit; its definitions serialised as JSON in each client shape and counted with ' +
      "cl100k. The baseline is the same names, descriptions and arguments with the arguments' JSON Schema exactly " +
      'as zod emits it (Cairn drops size limits, patterns and integer bounds, which the toolkit enforces anyway).',
    rows,
    notes: [
      'A model call carries these every turn (cached with the prompt prefix where the provider caches); benchmark 8 ' +
        'adds them to its session totals.',
      "The seed families keep their seeds' tool names, fields and descriptions; only the native family's wording " +
        'was trimmed (a status description that repeated the enum, step fields described twice).',
      'The compact variant (`extraTools: CAIRN_COMPACT_TOOLS`) passes each call whole to the native tool doing that ' +
        'work, so results, errors and atomicity are the same; one entry type serves adding and changing tasks.',
    ],
  };
}
