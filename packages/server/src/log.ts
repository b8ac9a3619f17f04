// The server's logger: one small interface, so a host can route lines to its own logging; the default writes
// one line per event to stderr (stdout is kept for the CLI's single `listening on ...` line).

export type LogFields = Record<string, unknown>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Lines like `[cairn] warn: plan "x" could not be loaded {"error":"..."}` on stderr (the console's elsewhere). */
export function createConsoleLogger(options: { quiet?: boolean } = {}): Logger {
  const write = (level: string, message: string, fields?: LogFields) => {
    const extra = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
    const line = `[cairn] ${level}: ${message}${extra}`;
    const stderr = (globalThis as { process?: { stderr?: { write(text: string): unknown } } }).process
      ?.stderr;
    if (stderr) stderr.write(`${line}\n`);
    else console.error(line);
  };
  return {
    info: (message, fields) => {
      if (!options.quiet) write('info', message, fields);
    },
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** What an error says, for a log field. */
export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
