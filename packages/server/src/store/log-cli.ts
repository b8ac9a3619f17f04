// `cairn log inspect|repair`: what an operator runs when the server refuses a plan because its log is damaged
// (see docs/STORAGE.md). Thin over inspectLog / repairLog of @cairn/core/fs; the result goes to stdout.
import { parseArgs } from 'node:util';
import { inspectLog, type LogInspection, type LogRepair, planFiles, repairLog } from '@cairn/core/fs';
import { usage } from '../cli-args.js';

export const LOG_USAGE = `  cairn log inspect <FILE.log | PLAN --data DIR> [--json]
      Shows what a plan's log holds without changing it: intact records, where it is damaged, how many intact
      records follow the damage. Exits 0 for an intact log, 1 for a damaged or torn one.
  cairn log repair <FILE.log | PLAN --data DIR> [--drop-after-damage] [--from-snapshot] [--json]
      Rewrites a damaged log with every intact record (or only those before the damage), keeping the original
      whole as <log>.damaged-<ms>; the server then opens the plan again. Refused while a process has it open.
      A log that lacks what its first-read snapshot saw: the snapshot is moved to <snap>.damaged-<ms>, and
      --from-snapshot also writes its content (the tasks as it shows them) back into the log.
`;

export interface LogCliIO {
  stdout: (text: string) => void;
}

export async function runLogCli(args: string[], io: LogCliIO): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'inspect' && action !== 'repair') {
    throw usage(`cairn log needs "inspect" or "repair"${action ? `, not "${action}"` : ''}.`);
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    throw usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    throw usage(`cairn log ${action} takes one log file, or one plan id with --data DIR.`);
  }
  const target = positionals[0] as string;
  const path = values.data ? planFiles(values.data, target).log : target;
  if (action === 'inspect') {
    const inspection = inspectLog(path);
    io.stdout(values.json ? `${JSON.stringify(inspection)}\n` : describe(inspection));
    return inspection.damage || inspection.tornBytes > 0 || inspection.header === 'bad' ? 1 : 0;
  }
  const repair = repairLog(path, {
    dropAfterDamage: values['drop-after-damage'] === true,
    fromSnapshot: values['from-snapshot'] === true,
  });
  io.stdout(values.json ? `${JSON.stringify(repair)}\n` : describeRepair(repair));
  return 0;
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      data: { type: 'string' },
      json: { type: 'boolean' },
      'drop-after-damage': { type: 'boolean' },
      'from-snapshot': { type: 'boolean' },
    },
    strict: true,
    allowPositionals: true,
  });
}

function describe(log: LogInspection): string {
  const lines = [`${log.path}: ${log.bytes} bytes`];
  if (log.header === 'bad' && !log.damage) {
    lines.push('not a Cairn update log (its first bytes are not "CYL1" + version): the server refuses it.');
    return `${lines.join('\n')}\n`;
  }
  lines.push(`intact records: ${log.records}${log.damage ? ' (before the damage)' : ''}`);
  if (log.damage?.snapshot) {
    const { snapshot, offset, damagedBytes } = log.damage;
    lines.push(
      `damaged: the log holds less than its snapshot ${snapshot.path} saw: ${snapshot.operations} operations ` +
        `of ${snapshot.clients} writers are in no intact record (the log ends at byte ${offset}` +
        `${damagedBytes > 0 ? `, ${damagedBytes} bytes short of what the snapshot saw` : ''}).`,
    );
  } else if (log.damage) {
    const { offset, damagedBytes, recordsAfter } = log.damage;
    lines.push(
      `damaged: from byte ${offset}, ${damagedBytes} bytes hold no intact record; ` +
        `${recordsAfter} intact records follow.`,
    );
  }
  if (log.tornBytes > 0) {
    lines.push(`torn tail: ${log.tornBytes} bytes of an incomplete last record (the next open cuts them).`);
  }
  if (log.pending) {
    lines.push(
      'waiting updates: some intact records depend on edits the damage destroyed; a repair keeps them, and they ' +
        'apply once a client that still holds those edits syncs.',
    );
  }
  lines.push(
    log.damage
      ? 'verdict: damaged. The plan is refused until `cairn log repair` rewrites it.'
      : log.tornBytes > 0
        ? 'verdict: torn tail only; the plan opens (the incomplete record held no acknowledged edit).'
        : 'verdict: intact.',
  );
  return `${lines.join('\n')}\n`;
}

function describeRepair(repair: LogRepair): string {
  if (!repair.repaired) return `${repair.path}: intact, nothing to repair (the file is untouched).\n`;
  const dropped = repair.droppedRecords > 0 ? `, left out ${repair.droppedRecords} after the damage` : '';
  const lost = repair.damage?.snapshot
    ? `the log was ${repair.damage.damagedBytes} bytes short of what its snapshot saw.`
    : `${repair.damage?.damagedBytes ?? repair.tornBytes} damaged bytes dropped.`;
  const lines = [`${repair.path}: repaired. Kept ${repair.keptRecords} intact records${dropped}; ${lost}`];
  if (repair.backup) lines.push(`The original is kept whole at ${repair.backup}.`);
  if (repair.snapshotBackup) {
    lines.push(
      `The snapshot, which saw more than the log holds, is kept at ${repair.snapshotBackup}` +
        (repair.restoredFromSnapshot
          ? '; its content written back into the log as one update.'
          : '; run again with --from-snapshot on that name restored to write its content back.'),
    );
  }
  return `${lines.join('\n')}\n`;
}
