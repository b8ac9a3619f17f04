// Argument parsing shared by the `cairn` subcommands: strict options, and errors that ask for the usage text.
import { parseArgs } from 'node:util';
import { CairnError } from '@cairn/core';

/** A bad command line: the CLI prints the message and then the usage text. */
export function usage(message: string): CairnError {
  return new CairnError('invalid_argument', message, { usage: true });
}

/** Parses `--name value` options strictly (no positionals, no unknown options); a mistake becomes `usage`. */
export function parseOptions<T extends Record<string, { type: 'string' | 'boolean' }>>(
  args: string[],
  options: T,
): { [K in keyof T]?: T[K]['type'] extends 'boolean' ? boolean : string } {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw usage((error as Error).message);
  }
}
