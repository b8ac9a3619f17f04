// The emitted tool definitions: valid JSON Schema (compiled by ajv), accepted by the MCP SDK's own Tool schema,
// typed as the OpenAI and Anthropic SDKs' tool types, free of $ref, and the seeds' schemas where they gave one.
import type { Tool as AnthropicTool } from '@anthropic-ai/sdk/resources/messages';
import { ListToolsResultSchema, ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { createPlan, createToolkit, FAMILY_NAMES } from '../src/index.js';
import { DEFINITION_FORMATS } from '../src/protocol-entry.js';

const toolkit = () => createToolkit(createPlan({ actor: 'agent:a' }), { families: [...FAMILY_NAMES] });

describe('tool definitions', () => {
  it('compile as JSON Schema (draft 2020-12) in every format, without $ref', () => {
    const tk = toolkit();
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    ajv.addFormat('date-time', true);
    const schemas = [
      ...tk.definitions('openai').map((d) => d.function.parameters),
      ...tk.definitions('anthropic').map((d) => d.input_schema),
      ...tk.definitions('mcp').map((d) => d.inputSchema),
    ];
    expect(schemas).toHaveLength(66);
    for (const schema of schemas) {
      expect(schema.type).toBe('object');
      expect(() => ajv.compile(schema)).not.toThrow();
      expect(JSON.stringify(schema)).not.toContain('$ref');
      expect(schema).not.toHaveProperty('$schema');
    }
  });

  it('are accepted by the MCP SDK and typed as the OpenAI and Anthropic SDK tools', () => {
    const tk = toolkit();
    const mcp = tk.definitions('mcp');
    for (const def of mcp)
      expect(ToolSchema.parse(def)).toMatchObject({ name: def.name, inputSchema: def.inputSchema });
    expect(ListToolsResultSchema.parse({ tools: mcp }).tools).toHaveLength(22);
    expect(mcp.find((d) => d.name === 'list_tasks')!.annotations).toEqual({ readOnlyHint: true });
    const openai = tk.definitions('openai') satisfies ChatCompletionFunctionTool[];
    const anthropic = tk.definitions('anthropic') satisfies AnthropicTool[];
    for (const def of openai) expect(def.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(anthropic.map((d) => d.name)).toEqual(openai.map((d) => d.function.name));
    expect(() => tk.definitions('gemini' as never)).toThrow(/formats: openai, anthropic, mcp/);
    // Every format the package lists is one a toolkit emits, each with every tool, and the refusal names them all.
    for (const format of DEFINITION_FORMATS) expect(tk.definitions(format)).toHaveLength(mcp.length);
    expect(() => tk.definitions('gemini' as never)).toThrow(`formats: ${DEFINITION_FORMATS.join(', ')}`);
    // Each call hands out its own copy.
    (tk.definitions('mcp')[0]!.inputSchema as { required?: string[] }).required = ['nope'];
    expect(tk.definitions('mcp')[0]!.inputSchema.required).toEqual(['tasks']);
  });

  it("emit seed 000's task_manage schema and the amplifier todo schema", () => {
    const tk = toolkit();
    const taskManage = tk.definitions('openai').find((d) => d.function.name === 'task_manage')!;
    expect(taskManage.function.description).toBe(
      'Manage the agent task list - short-term working memory for tracking steps in a plan. Tasks appear in your context on every message.',
    );
    expect(taskManage.function.parameters).toEqual({
      type: 'object',
      properties: {
        action: { type: 'string', enum: ['list', 'add', 'update', 'remove', 'clear', 'replace'] },
        text: { type: 'string' },
        id: { type: 'integer' },
        status: { type: 'string', enum: ['pending', 'active', 'done'] },
        tasks: { type: 'array', items: { type: 'string' } },
      },
      required: ['action'],
      additionalProperties: false,
    });
    const todo = tk.definitions('anthropic').find((d) => d.name === 'todo')!.input_schema;
    expect(todo.required).toEqual(['action']);
    expect(todo.properties!['action']).toMatchObject({ type: 'string', enum: ['create', 'update', 'list'] });
    const item = (
      todo.properties!['todos'] as { items: { required: string[]; properties: Record<string, unknown> } }
    ).items;
    expect(item.required).toEqual(['content', 'activeForm', 'status']);
    expect(item.properties['status']).toMatchObject({ enum: ['pending', 'in_progress', 'completed'] });
    const todoWrite = tk.definitions('mcp').find((d) => d.name === 'TodoWrite')!.inputSchema;
    expect(todoWrite.required).toEqual(['todos']);
    const graph = tk.definitions('mcp').find((d) => d.name === 'create_task')!.inputSchema;
    expect(graph.properties).toMatchObject({
      title: { type: 'string' },
      blocked_by: { type: 'array', items: { type: 'integer' } },
    });
  });

  it('validate the arguments the seeds show', () => {
    const tk = toolkit();
    const ajv = new Ajv2020({ strict: false });
    const schemaOf = (name: string) => tk.definitions('mcp').find((d) => d.name === name)!.inputSchema;
    const examples: Array<[string, unknown]> = [
      ['task_manage', { action: 'replace', tasks: ['a', 'b'] }],
      [
        'todo',
        {
          action: 'create',
          todos: [{ content: 'Run tests', activeForm: 'Running tests', status: 'pending' }],
        },
      ],
      ['create_task', { title: 'Write new AuthManager', blocked_by: [1] }],
      ['complete_task', { task_id: 1 }],
      ['list_ready_tasks', {}],
      [
        'set_ongoing_task',
        { task: 'Book', status: 'waiting_user', wakeAt: '2026-12-04T09:00:00Z', taskId: 3 },
      ],
      ['clear_ongoing_task', { outcome: 'cancelled', reason: 'no longer needed' }],
      ['update_tasks', { updates: [{ id: 'k3x9a2b', status: 'done' }] }],
    ];
    for (const [name, args] of examples) expect(ajv.validate(schemaOf(name), args), name).toBe(true);
    expect(ajv.validate(schemaOf('task_manage'), { action: 'add', text: 'x', extra: 1 })).toBe(false);
  });

  it('leave size limits and patterns to the toolkit, which refuses past them and names the limit', async () => {
    const tk = toolkit();
    for (const format of DEFINITION_FORMATS) {
      expect(JSON.stringify(tk.definitions(format))).not.toMatch(
        /"(minLength|maxLength|minItems|maxItems|pattern)"/,
      );
    }
    const long = await tk.dispatch('add_tasks', { tasks: [{ title: 'x'.repeat(501) }] });
    expect(long).toMatchObject({ error: { code: 'invalid_argument' } });
    expect(JSON.stringify(long)).toContain('a title has at most 500 characters');
    const actor = await tk.dispatch('add_tasks', { tasks: [{ title: 'x', assignee: 'bob' }] });
    expect(JSON.stringify(actor)).toContain('an actor is \\"agent:<name>\\"');
    expect(tk.plan.list()).toHaveLength(0);
  });
});
