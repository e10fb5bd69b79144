import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { DockhandError } from '../errors';
import type { EvalInstance } from './formats';

/*
 * A run directory holds everything about one evaluation run, so that an interrupted run picks up
 * where it stopped and a report can be made from it later:
 *
 *   run.json                 mode, model, instances file, budgets, when it started
 *   data/                    the run's fleet: SQLite store (tasks, event logs), mirrors, local forge
 *   results/<instance>.json  one per finished instance, written once (atomically) when it settles
 *   attempts/<instance>.attempt-<k>.json  best-of-N: each attempt's own, written once when it settles
 *   trajectories/<instance>.jsonl  the task's event log
 *   predictions.jsonl        SWE-bench predictions, rewritten from results/ after each instance
 *
 * The store is the truth about which instances have a task (one task per instance, found by its
 * ticket), results/ about which are finished: neither is ever made twice.
 */

export const RunManifest = z.object({
  mode: z.enum(['gold', 'null', 'cheat', 'model']),
  model: z.string(),
  instancesFile: z.string(),
  budgets: z.object({ maxTurns: z.number().optional(), maxCostUsd: z.number().optional(), maxWallClockSeconds: z.number().optional() }),
  attempts: z.number().int().min(1).default(1),
  createdAt: z.string(),
});
export type RunManifest = z.infer<typeof RunManifest>;

export const InstanceResult = z.object({
  instance_id: z.string(),
  repo: z.string(),
  /** What the run did: a task settled, or the instance could not be run (invalid). */
  status: z.enum(['settled', 'invalid']),
  taskId: z.string().optional(),
  /** The task's state when it settled (awaiting_review, failed, budget_exhausted, ...). */
  state: z.string().optional(),
  /** Reached review: green verified tests, an approving review and the policy gate passed. */
  reachedReview: z.boolean(),
  /** Why it stopped short of review, when it did. */
  stopReason: z.string().optional(),
  model_patch: z.string(),
  /** The diff the task ended with when it did not reach review (never offered as a prediction). */
  finalDiff: z.string().optional(),
  policy: z.object({ checked: z.boolean(), ok: z.boolean(), blocked: z.boolean(), violations: z.array(z.string()) }),
  /** Finish calls the verified stop refused. */
  refusedFinishes: z.number().int().min(0),
  turns: z.number().int().min(0),
  costUsd: z.number().min(0),
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  cacheReadTokens: z.number().int().min(0),
  cacheWriteTokens: z.number().int().min(0),
  /** From the task's creation to its end (the time it waited for a scheduler slot included). */
  wallSeconds: z.number().min(0),
  /** Of that, waiting for a scheduler slot: creation to `provisioning`. */
  queuedSeconds: z.number().min(0).optional(),
  /** Where its sandbox came from (`sandbox.ready`) and how long it took to start. */
  sandbox: z.object({ source: z.enum(['warm_pool', 'snapshot', 'cold']), startMs: z.number().min(0) }).optional(),
  /** The attempt this result is (best-of-N: the chosen one). */
  attempt: z.number().int().min(1).default(1),
  /** Best-of-N: every attempt, in order (cost, turns and tokens above are their sums). */
  attempts: z.array(z.object({
    attempt: z.number().int().min(1),
    taskId: z.string().optional(),
    reachedReview: z.boolean(),
    stopReason: z.string().optional(),
    turns: z.number().int().min(0),
    costUsd: z.number().min(0),
    wallSeconds: z.number().min(0),
  })).optional(),
  message: z.string().optional(),
});
export type InstanceResult = z.infer<typeof InstanceResult>;

/** Instance ids as file names (SWE-bench's are already safe: owner__repo-123). */
function fileStem(instanceId: string): string {
  return instanceId.replace(/[^A-Za-z0-9._-]/g, '_');
}

export class RunDirectory {
  readonly dataDir: string;

  constructor(readonly path: string) {
    this.dataDir = join(path, 'data');
  }

  ensure(): void {
    for (const dir of [this.path, this.dataDir, join(this.path, 'results'), join(this.path, 'trajectories')]) mkdirSync(dir, { recursive: true });
  }

  manifest(): RunManifest | undefined {
    const file = join(this.path, 'run.json');
    if (!existsSync(file)) return undefined;
    const parsed = RunManifest.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new DockhandError('bad_request', `${file}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  /** The manifest of a new run, or the existing one when it matches (resuming); a different run's is an error. */
  claim(manifest: RunManifest): RunManifest {
    const existing = this.manifest();
    if (existing) {
      for (const key of ['mode', 'model', 'instancesFile', 'attempts'] as const) {
        if (existing[key] !== manifest[key]) {
          throw new DockhandError('conflict', `${this.path} holds a run with ${key} ${JSON.stringify(existing[key])}, not ${JSON.stringify(manifest[key])}`, {
            hint: 'resume it with the same options, or give another --run-dir',
          });
        }
      }
      return existing;
    }
    this.ensure();
    atomicWrite(join(this.path, 'run.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  }

  resultPath(instanceId: string): string {
    return join(this.path, 'results', `${fileStem(instanceId)}.json`);
  }

  hasResult(instanceId: string): boolean {
    return existsSync(this.resultPath(instanceId));
  }

  /** The instance's result (best-of-N: the chosen attempt's), written once. */
  writeResult(result: InstanceResult): void {
    atomicWrite(this.resultPath(result.instance_id), `${JSON.stringify(result, null, 2)}\n`);
  }

  /** Best-of-N: attempt k's own result, written once when it settles (`attempts/<id>.attempt-k.json`). */
  attemptPath(instanceId: string, attempt: number): string {
    return join(this.path, 'attempts', `${fileStem(instanceId)}.attempt-${attempt}.json`);
  }

  hasAttempt(instanceId: string, attempt: number): boolean {
    return existsSync(this.attemptPath(instanceId, attempt));
  }

  writeAttempt(result: InstanceResult): void {
    mkdirSync(join(this.path, 'attempts'), { recursive: true });
    atomicWrite(this.attemptPath(result.instance_id, result.attempt), `${JSON.stringify(result, null, 2)}\n`);
  }

  readAttempt(instanceId: string, attempt: number): InstanceResult {
    return readResultFile(this.attemptPath(instanceId, attempt));
  }

  writeTrajectory(instanceId: string, attempt: number, lines: string): void {
    atomicWrite(join(this.path, 'trajectories', `${fileStem(instanceId)}${attempt > 1 ? `.attempt-${attempt}` : ''}.jsonl`), lines);
  }

  results(): InstanceResult[] {
    const dir = join(this.path, 'results');
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => readResultFile(join(dir, name)));
  }

  write(name: string, text: string): string {
    const file = join(this.path, name);
    atomicWrite(file, text);
    return file;
  }
}

function readResultFile(file: string): InstanceResult {
  const parsed = InstanceResult.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new DockhandError('bad_request', `${file}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** Written whole or not at all: a crash leaves the old file or none, never half of one. */
export function atomicWrite(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** Where an instance's repository is on this machine: `dockhand.repo_path` (relative: against `reposDir`). */
export function repositoryPathOf(instance: EvalInstance, reposDir: string): string {
  const given = instance.dockhand?.repo_path;
  if (!given) {
    throw new DockhandError('bad_request', `${instance.instance_id}: dockhand.repo_path: missing; say where the repository ${instance.repo} is (a git directory holding ${instance.base_commit.slice(0, 12)})`, {
      field: 'dockhand.repo_path',
    });
  }
  return isAbsolute(given) ? given : resolve(reposDir, given);
}
