import type Database from 'better-sqlite3';
import { z } from 'zod';
import { TEST_RUNNERS, type BaselineKey, type BaselineResult, type BaselineStore } from '../feedback/types';

/** A stored baseline (the JSON in `baselines.result`); infrastructure results are never stored. */
export const StoredBaseline = z.object({
  command: z.string(),
  // One list with the runners (a runner missing here made every baseline of its repositories throw in put).
  runner: z.enum([...TEST_RUNNERS, 'unknown']),
  passed: z.number().int().min(0),
  failed: z.number().int().min(0),
  /** Tests the suite ran (absent in rows stored before it was kept: unknown). */
  ran: z.number().int().min(0).optional(),
  /** Each step of the command at the base (feedback/types.ts TestStepOutcome). */
  steps: z
    .array(
      z.object({
        name: z.string(),
        /** The step as written (a selection's runner step is matched by it); absent in rows stored before it. */
        key: z.string().optional(),
        exitCode: z.number().int(),
        counted: z.enum(['tests', 'exit status']),
        passed: z.number().int().min(0),
        failed: z.number().int().min(0),
        tail: z.string().optional(),
        judgement: z.enum(['tests', 'exit status', 'cannot judge']).optional(),
      }),
    )
    .optional(),
  flaky: z.array(z.string()),
  preExistingFailures: z.array(z.string()),
  /** Files, suite ids and test files: what a task's named reproducing tests are matched against. */
  failureFiles: z.record(z.string(), z.string()).optional(),
  testIds: z.array(z.string()).optional(),
  testFiles: z.array(z.string()).optional(),
  seconds: z.number().min(0),
});

/** The feedback engine's baselines (full suite at a base SHA), kept in the server's SQLite file. */
export class SqliteBaselineStore implements BaselineStore {
  constructor(private readonly db: Database.Database) {}

  async get(key: BaselineKey): Promise<BaselineResult | undefined> {
    const value = this.db
      .prepare('SELECT result FROM baselines WHERE repo = ? AND recipe = ? AND base_sha = ?')
      .pluck()
      .get(key.repo, key.recipe, key.baseSha);
    if (typeof value !== 'string') return undefined;
    const parsed = StoredBaseline.safeParse(JSON.parse(value));
    // A row written by another version that no longer parses is recomputed, not trusted.
    return parsed.success ? parsed.data : undefined;
  }

  async put(key: BaselineKey, result: BaselineResult): Promise<void> {
    const { infrastructure: _infrastructure, ...stored } = result;
    this.db
      .prepare(
        `INSERT INTO baselines (repo, recipe, base_sha, result, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (repo, recipe, base_sha) DO UPDATE SET result = excluded.result, created_at = excluded.created_at`,
      )
      .run(key.repo, key.recipe, key.baseSha, JSON.stringify(StoredBaseline.parse(stored)), new Date().toISOString());
  }
}
