// The families' JSON Schemas are generated ahead (`pnpm tool-parameters`) so a page ships no JSON Schema
// generator; they must stay what zod makes of the live schemas, or a model would be told one shape and held to
// another. Written with the parts tools share referred to (parameters/shared.ts), each must still read, key by
// key and in order, as zod's does: the same bytes for a model.
import { describe, expect, it } from 'vitest';
import { FAMILIES } from '../src/tools/families.js';
import { jsonSchemaOf } from '../src/tools/json-schema.js';

describe("the families' generated JSON Schemas", () => {
  for (const family of Object.values(FAMILIES)) {
    it(`equal zod's for every ${family.name} tool (else run pnpm tool-parameters)`, () => {
      for (const tool of family.tools) {
        expect(JSON.stringify(tool.parameters), tool.name).toBe(
          JSON.stringify(jsonSchemaOf(tool.name, tool.input)),
        );
      }
    });
  }
});
