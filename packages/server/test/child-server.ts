// The server as a real child process (the CLI from source, or a fixture): started, its listening line read, and
// killed at the end of the test if it still runs.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onCleanup } from './helpers.js';

const SERVER_DIR = fileURLToPath(new URL('..', import.meta.url));

export interface Child {
  child: ChildProcess;
  url: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs node with `args` from the server package; resolves once it prints its listening line. */
export function start(args: string[], env: Record<string, string> = {}): Promise<Child> {
  const child = spawn(process.execPath, args, {
    cwd: SERVER_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CAIRN_SECRET: '', ...env },
  });
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited.then(() => undefined);
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const found = /^listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(out);
      if (found) {
        resolve({
          child,
          url: found[1]!.replace('http', 'ws'),
          port: Number(found[2]),
          stdout: () => out,
          stderr: () => err,
          exited,
        });
      }
    });
    exited.then(({ code }) => reject(new Error(`the server exited (${code}) before listening:\n${err}`)));
  });
}
