// What an operator does with a damaged update log, which `UpdateLog.open` refuses: see what it still holds
// (`inspectLog`), then keep every intact record in a new log, the original kept beside it (`repairLog`). A log
// that lacks what its first-read snapshot saw is damage too: the repair keeps the snapshot aside, never deletes it.
import * as nodeFs from 'node:fs';
import * as Y from 'yjs';
import { CairnError } from '../../errors.js';
import { type DecodedSnapshot, snapshotAheadOf } from '../../snapshot.js';
import { checkHeader, encodeHeader, encodeRecord, type LogScan, scanLog } from './format.js';
import { acquireLock } from './lock.js';
import { behindSnapshot, readSnapshotFile } from './snapshot-file.js';
import { describeDamage, fsyncDirSync, type LogDamage } from './update-log.js';

export interface LogInspection {
  path: string;
  /** File size. */
  bytes: number;
  /**
   * `empty`: a file cut short while its header was written (it holds nothing). `bad`: not a Cairn log, unless
   * `damage` is set (a damaged header with intact records behind it).
   */
  header: 'ok' | 'empty' | 'bad';
  /** Intact records before the first damage (the whole log when it is intact). */
  records: number;
  /** A record that fails its checksum with bytes after it; `open` refuses the file until it is repaired. */
  damage: LogDamage | null;
  /** Bytes of an incomplete last record (a write a crash cut short); `open` cuts them by itself. */
  tornBytes: number;
  /**
   * Applying every intact record leaves updates that wait for what the damage destroyed. They are kept by a
   * repair: a client that still holds the lost edits sends them on its next sync, and they apply then.
   */
  pending: boolean;
}

export interface LogRepair extends LogInspection {
  /** False when there was nothing to repair (the file is untouched). */
  repaired: boolean;
  /** Records written to the new log. */
  keptRecords: number;
  /** Intact records after the damage that were left out (`dropAfterDamage`). */
  droppedRecords: number;
  /** The original file, kept whole under this name; null if nothing was repaired (or there was no log). */
  backup: string | null;
  /**
   * The first-read snapshot, moved to this name because the repaired log lacks what it saw (it stays there,
   * readable, until an operator deletes it); null when it was left in place.
   */
  snapshotBackup: string | null;
  /** The snapshot's content was written back into the log as one update (`fromSnapshot`). */
  restoredFromSnapshot: boolean;
}

export interface RepairOptions {
  /** Keep only the records before the damage (default: every intact record, those after it too). */
  dropAfterDamage?: boolean;
  /**
   * When the log lacks what its snapshot saw, also write the snapshot's content into the log as one new update
   * (the tasks as the snapshot shows them, by a new writer). For a plan no client holds any more: a client that
   * still holds the lost history merges it task by task, the later write of a field winning.
   */
  fromSnapshot?: boolean;
  fs?: typeof nodeFs;
}

/**
 * Reads a log (and its snapshot) without changing them (no lock needed). Throws CairnError('not_found') if there
 * is neither a log nor a snapshot.
 */
export function inspectLog(path: string, fs: typeof nodeFs = nodeFs): LogInspection {
  return inspectBytes(path, readLog(path, fs), readSnapshotFile(fs, snapshotPathOf(path))).inspection;
}

/**
 * Rewrites a damaged or torn log with its intact records: the new file is written beside it, fsynced and renamed
 * over it; the original stays whole as `<log>.damaged-<ms>`. Takes the plan's lock, so it fails with
 * CairnError('locked') while a process has the plan open. A file that is not an update log is refused untouched.
 */
export function repairLog(path: string, options: RepairOptions = {}): LogRepair {
  const fs = options.fs ?? nodeFs;
  if (!path.endsWith('.log')) {
    throw new CairnError('invalid_argument', `${path} is not a plan log: its name must end in ".log".`, {
      path,
    });
  }
  const lock = acquireLock(`${path.slice(0, -'.log'.length)}.lock`, fs);
  try {
    const snapshotPath = snapshotPathOf(path);
    const snapshot = readSnapshotFile(fs, snapshotPath);
    const { inspection, scan } = inspectBytes(path, readLog(path, fs), snapshot);
    if (inspection.header === 'bad' && !inspection.damage) {
      throw new CairnError(
        'storage',
        `${path} is not a Cairn update log (its first bytes are not "CYL1" + version); it was left untouched.`,
        { path },
      );
    }
    const unchanged = {
      ...inspection,
      repaired: false,
      keptRecords: inspection.records,
      droppedRecords: 0,
      backup: null,
      snapshotBackup: null,
      restoredFromSnapshot: false,
    };
    if (!scan?.bad && !inspection.damage) return unchanged;
    const kept = (!scan ? [] : options.dropAfterDamage ? scan.before : [...scan.before, ...scan.after]).map(
      (r) => r.payload,
    );
    // The snapshot goes aside whenever the repaired log lacks what it saw: left in place, it would refuse the
    // repaired log again (and a later write would replace it, the one copy of what was lost).
    const setAside = snapshot !== null && snapshotAheadOf(snapshot.stateVector, kept) !== null;
    const restored = setAside && options.fromSnapshot === true;
    if (restored && snapshot) kept.push(contentAsUpdate(snapshot));
    const tmp = `${path}.repair-${process.pid}`;
    const fd = fs.openSync(tmp, 'w', 0o644);
    try {
      fs.writeFileSync(fd, Buffer.concat([encodeHeader(), ...kept.map(encodeRecord)]));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    const stamp = Date.now();
    const backup = fs.existsSync(path) ? `${path}.damaged-${stamp}` : null;
    if (backup) fs.linkSync(path, backup); // the original's bytes stay whole under the new name
    const snapshotBackup = setAside ? `${snapshotPath}.damaged-${stamp}` : null;
    if (snapshotBackup) fs.renameSync(snapshotPath, snapshotBackup);
    fs.renameSync(tmp, path);
    fsyncDirSync(fs, path);
    return {
      ...unchanged,
      repaired: true,
      keptRecords: kept.length - (restored ? 1 : 0),
      droppedRecords: scan ? scan.before.length + scan.after.length - kept.length + (restored ? 1 : 0) : 0,
      backup,
      snapshotBackup,
      restoredFromSnapshot: restored,
    };
  } finally {
    lock.release();
  }
}

/** `<name>.snap` beside `<name>.log`. */
function snapshotPathOf(path: string): string {
  return `${path.endsWith('.log') ? path.slice(0, -'.log'.length) : path}.snap`;
}

/** The snapshot's content as one update of a fresh writer. */
function contentAsUpdate(snapshot: DecodedSnapshot): Uint8Array {
  const doc = snapshot.doc();
  try {
    return Y.encodeStateAsUpdate(doc);
  } finally {
    doc.destroy();
  }
}

/** The log's bytes; none when it is missing beside a snapshot (a lost log: damage, not "no plan"). */
function readLog(path: string, fs: typeof nodeFs): Uint8Array {
  try {
    return fs.readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      if (fs.existsSync(snapshotPathOf(path))) return new Uint8Array(0);
      throw new CairnError('not_found', `There is no log at ${path}.`, { path });
    }
    throw new CairnError('storage', `Could not read ${path}: ${(error as Error).message}`, { path });
  }
}

function inspectBytes(
  path: string,
  bytes: Uint8Array,
  snapshot: DecodedSnapshot | null,
): { inspection: LogInspection; scan: LogScan | null } {
  const header = checkHeader(bytes);
  const inspection: LogInspection = {
    path,
    bytes: bytes.byteLength,
    header,
    records: 0,
    damage: null,
    tornBytes: 0,
    pending: false,
  };
  if (header === 'empty') {
    inspection.damage = behindSnapshot(path, snapshotPathOf(path), snapshot, bytes, bytes.byteLength, []);
    return { inspection, scan: null };
  }
  const scan = scanLog(bytes);
  // A file with a foreign header and no intact record is not a log at all: nothing here to inspect or repair.
  if (header === 'bad' && scan.after.length === 0) return { inspection, scan: null };
  inspection.records = scan.before.length;
  if (scan.bad?.kind === 'corrupt') inspection.damage = describeDamage(path, scan);
  if (scan.bad?.kind === 'torn') inspection.tornBytes = bytes.byteLength - scan.bad.offset;
  if (!inspection.damage) {
    const end = scan.bad?.offset ?? bytes.byteLength;
    const records = scan.before.map((r) => r.payload);
    inspection.damage = behindSnapshot(path, snapshotPathOf(path), snapshot, bytes, end, records);
  }
  const doc = new Y.Doc();
  for (const record of [...scan.before, ...scan.after]) Y.applyUpdate(doc, record.payload);
  inspection.pending = doc.store.pendingStructs !== null || doc.store.pendingDs !== null;
  doc.destroy();
  return { inspection, scan };
}
