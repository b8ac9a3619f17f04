// Where an extension keeps the small index that lets a start find its due work without opening every plan (a host
// gives a file on disk, store/index-file.ts; a key of its own storage elsewhere). Losing it only costs a rebuild.

export interface IndexFile {
  /** For logs: where it is kept. */
  readonly where: string;
  /** Its text, or null when there is none yet. Rejects when it exists but cannot be read. */
  read(): Promise<string | null>;
  /** Replaces it whole, atomically (the old text or the new one survives a crash). */
  write(text: string): Promise<void>;
}

/**
 * Writes of one index in turn, coalesced: a write asked for while one is queued is the same write, and it takes the
 * text as it is when it starts.
 */
export class IndexWriter {
  private writing: Promise<void> = Promise.resolve();
  private queued = false;

  constructor(
    private readonly file: IndexFile | null,
    private readonly text: () => string,
    private readonly failed: (error: unknown) => void,
  ) {}

  /** Resolves once every change so far is written (or its write failed and was reported). */
  save(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    if (!this.queued) {
      this.queued = true;
      this.writing = this.writing.then(async () => {
        this.queued = false;
        try {
          await file.write(this.text());
        } catch (error) {
          this.failed(error);
        }
      });
    }
    return this.writing;
  }
}
