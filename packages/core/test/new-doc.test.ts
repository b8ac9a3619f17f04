// A Y.Doc from a second copy of yjs (here the CommonJS build, required beside the ES import, as a `.cjs` file in an
// app would) is refused where it enters Cairn, with both copies named, before yjs's own "Unexpected content type".
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import * as Y from 'yjs';
import { createPlan } from '../src/plan.js';

describe('two copies of yjs', () => {
  it("refuses a Y.Doc from another copy with CairnError('two_yjs_copies') naming both files", () => {
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined); // yjs warns about the copy
    const require = createRequire(import.meta.url);
    // yjs's CommonJS build, beside the ES build the test (and Cairn) import: two module instances.
    const OtherY = require(require.resolve('yjs').replace(/yjs\.mjs$/, 'yjs.cjs')) as typeof Y;
    quiet.mockRestore();
    expect(OtherY.Doc).not.toBe(Y.Doc);
    const foreign = new OtherY.Doc();
    let caught: unknown = null;
    try {
      createPlan({ doc: foreign as unknown as Y.Doc, actor: 'agent:a' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ name: 'CairnError', code: 'two_yjs_copies' });
    const { ours, theirs } = (caught as { details: { ours: string; theirs: string } }).details;
    expect(theirs).toMatch(/yjs\.cjs$/);
    expect(ours).toMatch(/yjs\.mjs$/);
    expect((caught as Error).message).toContain(theirs);
    expect((caught as Error).message).toContain('npm ls yjs');
    expect(foreign.getMap('tasks').size).toBe(0); // nothing was written into it
  });

  it('refuses something that is not a Y.Doc at all, saying what doc must be', () => {
    expect(() => createPlan({ doc: {} as Y.Doc })).toThrow(
      expect.objectContaining({
        code: 'invalid_argument',
        message: expect.stringContaining('must be a Y.Doc'),
      }),
    );
  });

  it("accepts Cairn's own copy", () => {
    const doc = new Y.Doc();
    expect(createPlan({ doc }).doc).toBe(doc);
  });
});
