// A Y.Doc bound to a StoredLog: the DocPersistence lifecycle (load, edits queued during it, flush, close on
// destroy, errors to listeners) written once for the fs and IndexedDB persistence.
import * as Y from 'yjs';
import type { CairnError } from '../errors.js';
import { snapshotAhead } from '../snapshot.js';
import { applyStored, type DocPersistence } from '../storage.js';
import type { StoredLog, StoredLogOptions } from './stored-log.js';

export interface BoundDocOptions {
  /** Names the document in a console line when no onError listener is attached (`plan "x"`). */
  label: string;
  /** Opens the log; the state and error callbacks it needs come from the binding. */
  open: (options: Pick<StoredLogOptions, 'state' | 'onError'>) => Promise<StoredLog>;
  /** Load on the next macrotask, after the caller's first read (a long history takes hundreds of ms). */
  deferLoad?: boolean;
  /**
   * The error for a loaded document that lacks what the stored snapshot saw (records lost since it was written,
   * decisions/035); the open is then refused and nothing is written.
   */
  behindSnapshot?: (ahead: { clients: number; operations: number }, records: number) => CairnError;
  /** Told the opened log, before anything is applied (the fs adapter reports a torn tail here). */
  opened?: (log: StoredLog) => void;
  /** Turns a load failure into the CairnError `whenLoaded` rejects with. */
  describeError: (error: unknown) => CairnError;
}

/** The DocPersistence of a document over a StoredLog. */
export class BoundDoc implements DocPersistence {
  readonly whenLoaded: Promise<void>;
  /** The log once loaded; null before, after close, or when the load failed. */
  protected log: StoredLog | null = null;
  private readonly listeners = new Set<(error: CairnError) => void>();
  private readonly early: Uint8Array[] = [];
  private loadFailure: CairnError | null = null;
  private closing: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly doc: Y.Doc,
    private readonly options: BoundDocOptions,
  ) {
    // Registered before the first await: edits made while the log opens are queued, not lost.
    doc.on('update', this.onUpdate);
    doc.on('destroy', this.onDestroy);
    if (doc.store.clients.size > 0) this.early.push(Y.encodeStateAsUpdate(doc));
    this.whenLoaded = this.load();
    // Handled here so a caller that only awaits flush() does not crash on an unhandled rejection.
    this.whenLoaded.catch(() => undefined);
  }

  private async load(): Promise<void> {
    let log: StoredLog | null = null;
    try {
      log = await this.options.open({
        state: () => Y.encodeStateAsUpdate(this.doc),
        onError: (error) => this.tell(error),
      });
      this.options.opened?.(log);
      if (this.options.deferLoad) await new Promise((resolve) => setTimeout(resolve, 0));
      const records = log.takeLoaded();
      // Our listener is off while the stored state is applied (see applyStored).
      this.doc.off('update', this.onUpdate);
      let reaction: Uint8Array | null;
      try {
        reaction = applyStored(this.doc, records, this);
        this.refuseIfBehindSnapshot(log, records.length);
      } finally {
        this.doc.on('update', this.onUpdate);
      }
      this.log = log;
      for (const update of this.early.splice(0)) log.append(update); // the doc's edits before the load
      if (reaction) log.append(reaction);
      log.compactIfDue();
    } catch (error) {
      this.loadFailure = this.options.describeError(error);
      this.detach();
      await log?.release().catch(() => undefined); // refused: hold nothing, write nothing
      throw this.loadFailure;
    }
  }

  private refuseIfBehindSnapshot(log: StoredLog, records: number): void {
    const stored = log.storedSnapshot;
    if (!stored || !this.options.behindSnapshot) return;
    const ahead = snapshotAhead(stored.stateVector, Y.encodeStateVector(this.doc));
    if (ahead) throw this.options.behindSnapshot(ahead, records);
  }

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    if (origin === this || this.closed || this.loadFailure) return;
    if (this.log) this.log.append(update);
    else this.early.push(update);
  };

  private readonly onDestroy = (): void => {
    this.close().catch((error: unknown) => this.tell(this.options.describeError(error)));
  };

  async flush(): Promise<void> {
    await this.whenLoaded;
    await this.log?.flush();
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await this.whenLoaded.catch(() => undefined); // what was edited before the load completed is stored too
    this.closed = true;
    this.detach();
    if (this.loadFailure) return; // the open failed: nothing is held
    const log = this.log;
    this.log = null;
    await log?.close();
  }

  onError(listener: (error: CairnError) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Delivered after the current Yjs transaction, so a listener cannot re-enter the edit that failed. */
  private tell(error: CairnError): void {
    queueMicrotask(() => {
      if (this.listeners.size === 0) {
        console.error(`[cairn] ${this.options.label}: ${error.message}`);
        return;
      }
      for (const listener of this.listeners) {
        try {
          listener(error);
        } catch {
          // A throwing listener must not hide the error from the others.
        }
      }
    });
  }

  private detach(): void {
    this.doc.off('update', this.onUpdate);
    this.doc.off('destroy', this.onDestroy);
  }
}
