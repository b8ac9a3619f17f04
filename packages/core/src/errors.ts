// The one error type of Cairn: a closed set of codes, and a message written for whoever must fix the call
// (often an LLM), saying what was wrong and what is valid.

export const ERROR_CODES = [
  'invalid_argument', // a field has the wrong type or value
  'not_found', // an id that does not name a task (or a plan)
  'cycle', // the edit would close a dependency or parent cycle
  'invalid_transition', // a status or field change the rules forbid
  'conflict', // someone else holds what was asked for (a claim, a lock)
  'locked', // the storage is already open in another process
  'storage', // the store failed to read or write
  'unauthorized', // no valid credentials
  'forbidden', // valid credentials without the right
  'limit', // a size or rate limit was hit
  'unknown_tool', // a tool name the dispatcher does not know
  'two_yjs_copies', // a Y.Doc from another copy of yjs than Cairn's: the app has two copies installed
  'internal', // a bug: anything else that was thrown
] as const;

/** The closed set of codes a `CairnError` carries; a model reads them in tool errors (docs/TOOLS.md). */
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface CairnErrorJSON {
  code: ErrorCode;
  message: string;
  [detail: string]: unknown;
}

/**
 * The one error Cairn throws: a `code` from `ErrorCode`, a message written for the reader (what was wrong and
 * what is valid) and machine-readable `details`. A refused write changes nothing.
 */
export class CairnError extends Error {
  override readonly name = 'CairnError';
  readonly code: ErrorCode;
  /** Machine-readable details: the valid values, the known ids, the offending field. */
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.code = code;
    this.details = details;
  }

  toJSON(): CairnErrorJSON {
    return { ...this.details, code: this.code, message: this.message };
  }
}

/** Whether `value` is a `CairnError`. */
export function isCairnError(value: unknown): value is CairnError {
  return value instanceof CairnError;
}

/** Turns anything thrown into a CairnError, so callers handle one shape. */
export function toCairnError(value: unknown): CairnError {
  if (value instanceof CairnError) return value;
  const message = value instanceof Error ? value.message : String(value);
  return new CairnError('internal', `Unexpected error: ${message}`, {}, { cause: value });
}

/** The same error with `where` before its message, e.g. which of several updates of one call was refused. */
export function withContext(error: unknown, where: string): unknown {
  if (!(error instanceof CairnError)) return error;
  return new CairnError(error.code, `${where}: ${error.message}`, error.details, { cause: error });
}
