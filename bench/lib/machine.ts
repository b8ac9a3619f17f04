// What the numbers were measured on: CPU model, cores, memory, Node version, and how busy the machine was.
import * as os from 'node:os';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
  /** 1-minute load average when the run started and ended. */
  loadStart: number;
  loadEnd?: number;
}

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadStart: os.loadavg()[0]!,
  };
}

export function loadAverage(): number {
  return os.loadavg()[0]!;
}
