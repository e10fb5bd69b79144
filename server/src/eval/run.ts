import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CreateTaskResponse, isFinalState, type Budgets, type Task, type TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { InvalidInstanceError, synthesizeCassettes, type EvalMode } from './cassettes';
import { describeLineError, readInstances, writePredictions, type EvalInstance, type LineError } from './formats';
import { hasCommit } from './git-tree';
import { repositoryPathOf, RunDirectory, type InstanceResult } from './run-dir';
import { attemptOfUrl, chooseAttempt, withAttempt } from './attempts';
import { isTaskOfRun, runUrl } from './run-scope';
import { ensureRepository, openEvalSession, registeredName, type EvalSession, type EvalSessionOptions } from './session';

/*
 * `dockhand eval run`: every instance becomes one task on the run's fleet, on its registered
 * repository at `base_commit`, with the problem statement as the ticket (the agent never sees
 * `test_patch`, `patch`, `hints_text` or the test lists). The fleet's scheduler runs them with its
 * configured concurrency; each settles when it reaches review (a prediction: the diff a reviewer
 * would be shown) or stops short of it (failed, budget exhausted: an empty prediction, with the
 * reason and the diff it ended with kept in the result).
 *
 * Resumable: the task of an instance is found by its ticket in the run's store, so an instance
 * gets one task whatever happens to this process; a task that was running when the process died
 * is resumed by the fleet from its event log (its lease runs out first); an instance with a
 * result is never looked at again. Runs sharing a data directory are apart: the fleet claims only
 * this run's tasks (run-scope.ts).
 *
 * Results are written as each task settles (`results/<id>.json`, the trajectory, and
 * predictions.jsonl rewritten whole), while later instances are still being registered and
 * submitted; every file is written whole or not at all, so a killed run keeps what settled.
 */

export type RunMode = EvalMode | 'model';

export interface EvalRunOptions {
  instancesFile: string;
  runDir: string;
  mode: RunMode;
  /** Where relative `dockhand.repo_path`s are (default: the instances file's directory). */
  reposDir?: string;
  /** The fleet's data (store, mirrors, toolchains) when shared between runs; default `<run-dir>/data`. */
  dataDir?: string;
  budgets?: Partial<Budgets>;
  concurrency?: number;
  /** Only these instance ids. */
  only?: string[];
  /** Progress lines for the CLI. */
  onProgress?: (line: string) => void;
  /**
   * Stops the run (SIGTERM/SIGINT in the CLI): nothing more is submitted or waited for, the fleet
   * closes with every container it started removed, snapshot builds included; the tasks stay in
   * the store and the next run in this run directory resumes them.
   */
  signal?: AbortSignal;
  /** Best-of-N: tasks per instance, run side by side; the first that reaches review is chosen. Default 1. */
  attempts?: number;
  /** For unit tests of the harness only (`EvalSessionOptions.parts`). */
  sessionParts?: EvalSessionOptions['parts'];
  /** For unit tests of the harness only: awaited before an instance is registered (a slow registration). */
  beforeRegistering?: (instance: EvalInstance) => Promise<void>;
}

export interface EvalRunSummary {
  runDir: string;
  predictionsFile: string;
  /** Bad instance lines, reported and skipped. */
  lineErrors: LineError[];
  instances: number;
  /** Finished by this invocation. */
  settled: number;
  /** Already finished by an earlier invocation (not run again). */
  resumedDone: number;
  invalid: number;
  results: InstanceResult[];
}

const SETTLED = new Set(['awaiting_review', 'pr_open']);

function modelName(mode: RunMode, session: EvalSession): string {
  return mode === 'model' ? session.config.model.name : `dockhand-replay/${mode}`;
}

function ticketOf(instance: EvalInstance, runId: string, attempt: number): { kind: 'issue'; id: string; title: string; body: string; url: string } {
  const firstLine = instance.problem_statement.split('\n').find((line) => line.trim() !== '')?.trim() ?? instance.instance_id;
  return { kind: 'issue', id: instance.instance_id, title: firstLine.slice(0, 200), body: instance.problem_statement.slice(0, 100_000), url: withAttempt(runUrl(runId, instance.instance_id), attempt) };
}

const attemptKey = (instanceId: string, attempt: number) => `${attempt}\u0000${instanceId}`;

/** Best-of-N: every attempt of the instance has settled; the chosen one becomes its result. */
function settleInstance(dir: RunDirectory, instance: EvalInstance, attempts: number, instances: EvalInstance[], model: string, say: (line: string) => void): void {
  const chosen = chooseAttempt(Array.from({ length: attempts }, (_, index) => dir.readAttempt(instance.instance_id, index + 1)));
  dir.writeResult(chosen);
  writeRunPredictions(dir, instances, model);
  say(`${instance.instance_id}: ${chosen.reachedReview ? `attempt ${chosen.attempt} chosen` : 'no attempt reached review'} (${chosen.attempts?.filter((attempt) => attempt.reachedReview).length ?? 0} of ${attempts} reached review, $${chosen.costUsd.toFixed(4)} in all)`);
}

/** The run's tasks by instance and attempt (`attemptKey`), found by their tickets' URLs. */
async function tasksByInstance(session: EvalSession, runId: string): Promise<Map<string, Task>> {
  const found = new Map<string, Task>();
  let cursor: string | undefined;
  do {
    const page = await session.fleet.store.listTasks({ limit: 200, ...(cursor ? { cursor } : {}) });
    for (const task of page.tasks) {
      if (task.ticket.kind !== 'issue' || !task.ticket.url) continue;
      const attempt = attemptOfUrl(task.ticket.url);
      const key = attemptKey(task.ticket.id, attempt);
      if (task.ticket.url === withAttempt(runUrl(runId, task.ticket.id), attempt) && !found.has(key)) found.set(key, task);
    }
    cursor = page.nextCursor;
  } while (cursor);
  return found;
}

function lastOf<T extends TaskEvent['type']>(events: TaskEvent[], type: T): Extract<TaskEvent, { type: T }> | undefined {
  const isType = (event: TaskEvent): event is Extract<TaskEvent, { type: T }> => event.type === type;
  return events.filter(isType).at(-1);
}

/** What a settled task amounts to for the evaluation. */
export function resultOf(instance: EvalInstance, task: Task, events: TaskEvent[], diff: string, attempt = 1): InstanceResult {
  const policy = events.filter((event): event is Extract<TaskEvent, { type: 'policy.checked' }> => event.type === 'policy.checked' && event.data.stage === 'review').at(-1);
  const overridden = policy?.data.overridden === true;
  const policyOk = policy ? policy.data.ok || overridden : false;
  const reachedReview = SETTLED.has(task.state) || (task.state !== 'failed' && events.some((event) => event.type === 'task.state' && event.data.state === 'awaiting_review'));
  const accepted = reachedReview && policyOk;
  const failed = lastOf(events, 'task.failed');
  const budget = lastOf(events, 'budget.exceeded');
  const refusedFinishes = events.filter((event) => event.type === 'tool.finished' && event.data.name === 'finish' && event.data.isError).length;
  const lastTs = events.at(-1)?.ts ?? task.updatedAt;
  // Picked by the scheduler: queued → provisioning (a sandbox is acquired next).
  const started = events.find((event) => event.type === 'task.state' && (event.data.state === 'provisioning' || event.data.state === 'running'));
  const sandbox = events.find((event): event is Extract<TaskEvent, { type: 'sandbox.ready' }> => event.type === 'sandbox.ready');
  const stopReason = accepted
    ? undefined
    : failed
      ? `${failed.data.code}: ${failed.data.message.split('\n')[0]}`
      : budget
        ? `budget ${budget.data.budget} exhausted (${budget.data.used} of ${budget.data.limit})`
        : policy && !policyOk
          ? 'blocked by the policy gate'
          : `ended ${task.state}`;
  return {
    instance_id: instance.instance_id,
    repo: instance.repo,
    status: 'settled',
    taskId: task.id,
    state: task.state,
    reachedReview: accepted,
    ...(stopReason ? { stopReason } : {}),
    model_patch: accepted ? diff : '',
    ...(!accepted && diff ? { finalDiff: diff } : {}),
    policy: {
      checked: policy !== undefined,
      ok: policyOk,
      blocked: events.some((event) => event.type === 'policy.checked' && !event.data.ok && !event.data.overridden),
      violations: [...new Set(events.flatMap((event) => (event.type === 'policy.checked' ? event.data.violations.map((violation) => `${violation.rule} ${violation.path}`) : [])))],
    },
    refusedFinishes,
    turns: task.usage.turns,
    costUsd: task.usage.costUsd,
    inputTokens: task.usage.inputTokens,
    outputTokens: task.usage.outputTokens,
    cacheReadTokens: task.usage.cacheReadTokens,
    cacheWriteTokens: task.usage.cacheWriteTokens,
    wallSeconds: Math.max(0, (Date.parse(lastTs) - Date.parse(task.createdAt)) / 1000),
    ...(started ? { queuedSeconds: Math.max(0, (Date.parse(started.ts) - Date.parse(task.createdAt)) / 1000) } : {}),
    ...(sandbox ? { sandbox: { source: sandbox.data.source, startMs: sandbox.data.startMs } } : {}),
    attempt,
  };
}

function invalidResult(instance: EvalInstance, message: string): InstanceResult {
  return {
    instance_id: instance.instance_id, repo: instance.repo, status: 'invalid', reachedReview: false, model_patch: '', message,
    policy: { checked: false, ok: false, blocked: false, violations: [] },
    refusedFinishes: 0, turns: 0, costUsd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, wallSeconds: 0, attempt: 1,
  };
}

/** Predictions in the instances file's order, from the results so far. */
export function writeRunPredictions(dir: RunDirectory, instances: EvalInstance[], model: string): string {
  const results = new Map(dir.results().map((result) => [result.instance_id, result]));
  const predictions = instances.flatMap((instance) => {
    const result = results.get(instance.instance_id);
    return result ? [{ instance_id: instance.instance_id, model_name_or_path: model, model_patch: result.model_patch }] : [];
  });
  return dir.write('predictions.jsonl', writePredictions(predictions));
}

export async function runEvaluation(options: EvalRunOptions): Promise<EvalRunSummary> {
  const instancesFile = resolve(options.instancesFile);
  const reposDir = resolve(options.reposDir ?? dirname(instancesFile));
  const { records, errors } = readInstances(readFileSync(instancesFile, 'utf8'));
  for (const error of errors) options.onProgress?.(`skipped ${describeLineError(error, instancesFile)}`);
  const instances = options.only ? records.filter((record) => options.only?.includes(record.instance_id)) : records;
  const dir = new RunDirectory(resolve(options.runDir));
  const say = (line: string) => options.onProgress?.(line);
  const signal = options.signal;

  const attempts = options.attempts ?? 1;
  // Set once the run directory is claimed; until then the fleet claims no task (run-scope.ts).
  let runId: string | undefined;
  const session = await openEvalSession({
    dataDir: options.dataDir ? resolve(options.dataDir) : dir.dataDir,
    scripted: options.mode !== 'model',
    claims: (task) => runId !== undefined && isTaskOfRun(task, runId),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.sessionParts ? { parts: options.sessionParts } : {}),
  });
  const model = modelName(options.mode, session);
  let settled = 0;
  let invalid = 0;
  const resumedDone = instances.filter((instance) => dir.hasResult(instance.instance_id)).length;
  try {
    const manifest = dir.claim({ mode: options.mode, model, instancesFile, budgets: options.budgets ?? {}, attempts, createdAt: new Date().toISOString() });
    const thisRun = `${manifest.createdAt}/${dir.path}`;
    runId = thisRun;
    session.fleet.scheduler.wake();
    const existing = await tasksByInstance(session, thisRun);
    // One entry per attempt still running; an instance is finished when its last attempt settles.
    const watching = new Map<string, { instance: EvalInstance; attempt: number; taskId: string }>();
    // Instances whose every attempt was submitted (best-of-N chooses only among all of them), and those chosen.
    const submitted = new Set<string>();
    const chosen = new Set<string>();
    const settleIfComplete = (instance: EvalInstance) => {
      if (attempts === 1 || chosen.has(instance.instance_id) || !submitted.has(instance.instance_id)) return;
      if ([...watching.values()].some((entry) => entry.instance === instance)) return;
      chosen.add(instance.instance_id);
      settleInstance(dir, instance, attempts, instances, model, say);
      settled++;
    };

    /** Records every watched task that has settled: its result, trajectory and the predictions so far. */
    const collectSettled = async (): Promise<void> => {
      for (const [key, { instance, attempt, taskId }] of watching) {
        const task = await session.fleet.store.getTask(taskId);
        if (!task || !(SETTLED.has(task.state) || isFinalState(task.state))) continue;
        // Taken off first: an instance found invalid meanwhile has removed its entries.
        if (!watching.delete(key)) continue;
        const events = await session.fleet.store.listEvents(taskId, 0, 100_000);
        const diff = (await session.fleet.store.getResult(taskId))?.diff ?? '';
        const result = resultOf(instance, task, events, diff, attempt);
        dir.writeTrajectory(instance.instance_id, attempt, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
        if (attempts > 1) dir.writeAttempt(result);
        else dir.writeResult(result);
        // Nothing is pushed: the evaluation's review rejects the diff once it is recorded.
        if (task.state === 'awaiting_review') await session.request('POST', `/v1/tasks/${taskId}/review`, { action: 'reject', comments: [] });
        say(`${instance.instance_id}${attempts > 1 ? ` attempt ${attempt}` : ''}: ${result.reachedReview ? 'reached review' : `stopped: ${result.stopReason}`} (${result.turns} turns, $${result.costUsd.toFixed(4)}, ${result.wallSeconds.toFixed(1)} s, ${result.queuedSeconds?.toFixed(1) ?? '?'} s queued)`);
        if (attempts === 1) {
          writeRunPredictions(dir, instances, model);
          settled++;
        } else settleIfComplete(instance);
      }
    };

    // Results are written as each task settles, while later instances are still being registered
    // and submitted (a slow registration no longer holds back what has finished).
    let submitting = true;
    let stop: unknown;
    const watcher = (async () => {
      while (!signal?.aborted && stop === undefined && (submitting || watching.size > 0)) {
        await collectSettled();
        await pause(500, signal);
      }
    })().catch((error: unknown) => {
      stop ??= error;
    });

    try {
      for (const instance of instances) {
        if (signal?.aborted || stop !== undefined) break;
        if (dir.hasResult(instance.instance_id)) continue;
        try {
          const repoPath = repositoryPathOf(instance, reposDir);
          if (!hasCommit(repoPath, instance.base_commit)) throw new InvalidInstanceError(`${instance.instance_id}: base_commit ${instance.base_commit} is not in ${repoPath}`);
          const cassettes = options.mode === 'model' ? undefined : synthesizeCassettes(options.mode, instance, repoPath);
          await options.beforeRegistering?.(instance);
          // A registration can take minutes: a stop does not wait for it (closing the fleet ends its git).
          const repo = await untilAborted(ensureRepository(session, registeredName(instance.repo), repoPath, instance.base_commit), signal);
          if (repo === undefined) break;
          for (let attempt = 1; attempt <= attempts; attempt++) {
            if (attempts > 1 && dir.hasAttempt(instance.instance_id, attempt)) continue;
            if (cassettes) session.script(instance.instance_id, cassettes, attempt);
            const known = existing.get(attemptKey(instance.instance_id, attempt));
            const taskId = known?.id ?? (await session.api('POST', '/v1/tasks', CreateTaskResponse, {
              ticket: ticketOf(instance, thisRun, attempt),
              context: { repo, baseSha: instance.base_commit },
              budgets: options.budgets ?? {},
            })).id;
            say(`${instance.instance_id}${attempts > 1 ? ` attempt ${attempt}` : ''}: task ${taskId}${known ? ' (resumed)' : ''}`);
            watching.set(attemptKey(instance.instance_id, attempt), { instance, attempt, taskId });
          }
          submitted.add(instance.instance_id);
          // Every attempt settled before an interruption, the choice not yet written.
          settleIfComplete(instance);
        } catch (error) {
          // The instance's own fault (its repository, patch, fields): recorded and skipped; anything else stops the run.
          if (!(error instanceof InvalidInstanceError) && !(error instanceof DockhandError && error.code === 'bad_request')) throw error;
          const message = error instanceof Error ? error.message : String(error);
          // Attempts already submitted are not waited for: the instance's result is this one.
          for (const [key, entry] of watching) if (entry.instance === instance) watching.delete(key);
          dir.writeResult(invalidResult(instance, message));
          invalid++;
          say(`${instance.instance_id}: invalid: ${message}`);
        }
      }
    } catch (error) {
      stop ??= error;
    } finally {
      submitting = false;
    }
    await watcher;
    if (stop !== undefined) throw stop;
  } finally {
    await session.close();
  }
  const predictionsFile = writeRunPredictions(dir, instances, model);
  return { runDir: dir.path, predictionsFile, lineErrors: errors, instances: instances.length, settled, resumedDone, invalid, results: dir.results() };
}

/** `work`'s value, or undefined as soon as `signal` aborts (the work goes on unawaited). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const aborted = () => {
      work.catch(() => undefined);
      resolve(undefined);
    };
    signal.addEventListener('abort', aborted, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
  });
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      done();
    }
    signal?.addEventListener('abort', finish, { once: true });
  });
}
