import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/*
 * The workspace of a working task, kept after each tool call that may have written to it: the
 * sandbox's whole diff against the base commit (`Sandbox.diff()`: tracked and untracked files,
 * binary patches, ignored files left out). A resumed task — after a restart, or after its
 * sandbox was lost — gets a fresh sandbox with this diff applied, so changes made by
 * `run_command` or a test run survive, not only those `edit_file` logged as `file.changed`.
 *
 * One file per task under `<dataDir>/checkpoints/` (0600 in a 0700 directory: a diff can hold
 * whatever the workspace held), replaced atomically. Bounded: a diff over `maxBytes` is not kept;
 * the file then says so, and a resume restores only the logged edits and tells the agent.
 * Per node: a task resumed on another worker of a Postgres fleet finds no checkpoint here and
 * falls back to the logged edits (see the README's design notes).
 */

/** The checkpoint of one task: the diff written after the event `seq`, or why there is none. */
export type Checkpoint = { seq: number; diff: string } | { seq: number; omittedBytes: number };

const Stored = z.union([
  z.object({ seq: z.number().int(), diff: z.string() }),
  z.object({ seq: z.number().int(), omittedBytes: z.number().int() }),
]);

export interface CheckpointStore {
  save(taskId: string, seq: number, diff: string): Promise<Checkpoint>;
  load(taskId: string): Promise<Checkpoint | undefined>;
  remove(taskId: string): Promise<void>;
}

export const DEFAULT_CHECKPOINT_MAX_BYTES = 64 * 1024 * 1024;

export class FileCheckpointStore implements CheckpointStore {
  private readonly dir: string;
  private readonly maxBytes: number;

  constructor(options: { dataDir: string; maxBytes?: number }) {
    this.dir = join(options.dataDir, 'checkpoints');
    this.maxBytes = options.maxBytes ?? DEFAULT_CHECKPOINT_MAX_BYTES;
  }

  async save(taskId: string, seq: number, diff: string): Promise<Checkpoint> {
    const bytes = Buffer.byteLength(diff);
    const checkpoint: Checkpoint = bytes > this.maxBytes ? { seq, omittedBytes: bytes } : { seq, diff };
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(taskId);
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(checkpoint), { mode: 0o600 });
    await rename(temporary, file);
    return checkpoint;
  }

  async load(taskId: string): Promise<Checkpoint | undefined> {
    let text: string;
    try {
      text = await readFile(this.file(taskId), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const parsed = Stored.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  }

  async remove(taskId: string): Promise<void> {
    await rm(this.file(taskId), { force: true });
  }

  private file(taskId: string): string {
    // Task ids are the store's own (uuid-like); anything else is made safe for a file name.
    return join(this.dir, `${taskId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  }
}
