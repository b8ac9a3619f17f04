// Where a plan's Y.Doc comes from, and the two ways that goes wrong outside plain Node with a clear error instead of
// a foreign one. Two copies of yjs in one program (a `.cjs` file requiring yjs beside an ES import, an npm alias, a
// bundler that resolved two versions) break Yjs's `instanceof` checks: the first write ends in yjs's own "Unexpected
// content type", saying nothing of why. And a Worker's top level forbids the random client id every new doc draws.
import * as Y from 'yjs';
import { CairnError } from './errors.js';

/**
 * A new Y.Doc, or a CairnError saying where to create it when the runtime forbids random numbers here: a Worker's
 * global scope (workerd), where Yjs cannot draw the document's random client id.
 */
export function newDoc(): Y.Doc {
  try {
    return new Y.Doc();
  } catch (error) {
    if (error instanceof Error && /within global scope/i.test(error.message)) {
      throw new CairnError(
        'invalid_argument',
        "A plan cannot be created at a Worker's top level (global scope): the runtime forbids random numbers " +
          'there, and every plan document draws a random client id. Create plans inside a handler: in fetch() for ' +
          "a plan per request, or in a Durable Object's constructor or methods.",
        { scope: 'global' },
        { cause: error },
      );
    }
    throw error;
  }
}

/** Throws CairnError('two_yjs_copies') when `doc` is a Y.Doc built by another copy of yjs than Cairn's. */
export function assertCairnsYjs(doc: unknown, where: string): asserts doc is Y.Doc {
  if (doc instanceof Y.Doc) return;
  if (!looksLikeDoc(doc)) {
    throw new CairnError(
      'invalid_argument',
      `${where}: doc must be a Y.Doc (from yjs), not ${describe(doc)}.`,
    );
  }
  const ours = fileOf((fn) => new Y.Doc().transact(fn));
  const theirs = fileOf((fn) => doc.transact(fn));
  throw new CairnError(
    'two_yjs_copies',
    `${where}: this Y.Doc was made by another copy of yjs (${theirs ?? 'unknown path'}) than the one Cairn ` +
      `imports (${ours ?? 'unknown path'}). Two copies break Yjs's own checks, and the first write would fail. ` +
      'Make every import resolve to one yjs: install yjs once (it is a peer dependency of Cairn), import it the ' +
      'same way everywhere (not require() in one file and import in another), and drop npm aliases or duplicate ' +
      'versions (`npm ls yjs` lists them).',
    { ours, theirs },
  );
}

function looksLikeDoc(value: unknown): value is { transact(fn: () => void): void } {
  const doc = value as { transact?: unknown; getMap?: unknown; clientID?: unknown } | null;
  return (
    typeof doc === 'object' &&
    doc !== null &&
    typeof doc.transact === 'function' &&
    typeof doc.getMap === 'function' &&
    typeof doc.clientID === 'number'
  );
}

/** The file of the yjs copy that runs `enter`'s callback, read from a stack trace taken inside it. */
function fileOf(enter: (fn: () => void) => void): string | null {
  let stack = '';
  try {
    enter(() => {
      stack = new Error('where').stack ?? '';
    });
  } catch {
    return null;
  }
  // The first frame below ours is yjs's transact(): `at transact (file:///…/yjs.mjs:12:3)` or `transact@file:…`.
  const frames = stack.split('\n').slice(2);
  for (const frame of frames) {
    const match = /(?:\(|@|at )((?:file|https?|node):\/\/[^\s)]+?|\/[^\s)]+?)(?::\d+){1,2}\)?$/.exec(
      frame.trim(),
    );
    if (match?.[1] && /yjs/i.test(match[1])) return asPath(match[1]);
  }
  return null;
}

/** A `file:` URL as the path a user types (`npm ls` and editors speak paths); other locations as they are. */
function asPath(location: string): string {
  if (!location.startsWith('file://')) return location;
  try {
    return decodeURIComponent(new URL(location).pathname);
  } catch {
    return location;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return `an object (${Object.getPrototypeOf(value)?.constructor?.name ?? 'no prototype'})`;
}
