import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { DockhandError } from '../errors';
import { EVAL_MODES } from '../eval/cassettes';
import { compareRuns, formatComparison } from '../eval/compare';
import { readInstances, writeInstances, type EvalInstance } from '../eval/formats';
import { gradePredictions, writeGradeReport } from '../eval/grade';
import { makeInstances } from '../eval/make';
import { buildReport, writeReportFiles } from '../eval/report';
import { runEvaluation, type RunMode } from '../eval/run';
import { RunDirectory } from '../eval/run-dir';
import { openEvalSession } from '../eval/session';

/*
 * `dockhand eval …` — the evaluation harness (server/src/eval/README.md):
 *   run     instances JSONL → one task each on the run's fleet → predictions JSONL (resumable)
 *   grade   predictions → fresh sandbox per instance, model_patch + test_patch, the repo's tests
 *   make    instances from a repository's history and from planted bugs, verified fail → pass
 *   report  Markdown + HTML for a run (and its grade)
 *   compare two runs on the same instances, paired
 */

const out = (line: string) => process.stdout.write(`${line}\n`);

function positiveInt(name: string) {
  return (value: string): number => {
    const number = Number(value);
    if (!Number.isInteger(number) || number < 1) throw new DockhandError('bad_request', `${name}: must be a whole number of at least 1, got ${JSON.stringify(value)}`, { field: name });
    return number;
  };
}

function positiveNumber(name: string) {
  return (value: string): number => {
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new DockhandError('bad_request', `${name}: must be a positive number, got ${JSON.stringify(value)}`, { field: name });
    return number;
  };
}

function mustExist(path: string, what: string): string {
  const full = resolve(path);
  if (!existsSync(full)) throw new DockhandError('not_found', `${what}: ${full} does not exist`);
  return full;
}

/**
 * SIGTERM or SIGINT stops a run the way a user means it: nothing new is submitted or waited for,
 * the fleet closes (running tasks stay resumable from their logs) and every container it started
 * is removed, snapshot builds included (`eval/containers.ts`). A second signal exits at once.
 */
function stopOnSignals(): { signal: AbortSignal; by?: NodeJS.Signals; dispose: () => void } {
  const controller = new AbortController();
  const state: { signal: AbortSignal; by?: NodeJS.Signals; dispose: () => void } = { signal: controller.signal, dispose: () => undefined };
  const handler = (signal: NodeJS.Signals) => {
    if (state.by) process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    state.by = signal;
    process.stderr.write(`${signal}: stopping; removing the run's containers (again to exit at once)\n`);
    controller.abort(signal);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  state.dispose = () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
  return state;
}

export function registerEvalCommands(program: Command): void {
  const evaluation = program.command('eval').description('evaluate the pipeline on SWE-bench-format instances');

  evaluation.command('run <instances>')
    .description('run every instance as a task; writes predictions.jsonl and per-instance results into --run-dir')
    .requiredOption('--run-dir <dir>', 'where the run keeps its state (run again with the same directory to resume)')
    .addOption(new Option('--mode <mode>', 'scripted replay model, or the configured model (ANTHROPIC_API_KEY)').choices([...EVAL_MODES, 'model']).default('model'))
    .option('--repos-dir <dir>', 'where relative dockhand.repo_path values are (default: the instances file\'s directory)')
    .option('--data-dir <dir>', 'the fleet\'s data, to share snapshots and toolchains between runs (default: <run-dir>/data)')
    .option('--concurrency <n>', 'tasks at once (default DOCKHAND_CONCURRENCY)', positiveInt('--concurrency'))
    .option('--max-turns <n>', 'turn budget per instance', positiveInt('--max-turns'))
    .option('--max-cost <usd>', 'cost budget per instance in USD', positiveNumber('--max-cost'))
    .option('--max-minutes <n>', 'wall-clock budget per instance', positiveNumber('--max-minutes'))
    .option('--only <ids>', 'comma-separated instance ids')
    .option('--attempts <n>', 'best-of-N: tasks per instance, side by side; the first to reach review (green verified tests, approving review) is chosen', positiveInt('--attempts'), 1)
    .action(async (instances: string, options: { runDir: string; mode: RunMode; reposDir?: string; dataDir?: string; concurrency?: number; maxTurns?: number; maxCost?: number; maxMinutes?: number; only?: string; attempts: number }) => {
      const stopping = stopOnSignals();
      const summary = await runEvaluation({
        signal: stopping.signal,
        instancesFile: mustExist(instances, 'instances'),
        runDir: options.runDir,
        mode: options.mode,
        ...(options.reposDir ? { reposDir: options.reposDir } : {}),
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
        ...(options.concurrency ? { concurrency: options.concurrency } : {}),
        budgets: {
          ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
          ...(options.maxCost ? { maxCostUsd: options.maxCost } : {}),
          ...(options.maxMinutes ? { maxWallClockSeconds: Math.max(10, Math.round(options.maxMinutes * 60)) } : {}),
        },
        ...(options.only ? { only: options.only.split(',').map((id) => id.trim()).filter(Boolean) } : {}),
        attempts: options.attempts,
        onProgress: out,
      }).finally(stopping.dispose);
      const reached = summary.results.filter((result) => result.reachedReview).length;
      out(`${summary.instances} instances: ${summary.settled} run now, ${summary.resumedDone} done before, ${summary.invalid} invalid, ${summary.lineErrors.length} bad lines skipped; ${reached} reached review`);
      out(`predictions: ${summary.predictionsFile}`);
      if (stopping.by) {
        out(`stopped by ${stopping.by}: its containers are removed; run again with --run-dir ${options.runDir} to resume`);
        // A fleet close left behind (eval/containers.ts) may still hold a socket open.
        process.exit(128 + (stopping.by === 'SIGINT' ? 2 : 15));
      }
    });

  evaluation.command('grade <instances> <predictions>')
    .description('apply each model_patch and test_patch in a fresh sandbox and run FAIL_TO_PASS / PASS_TO_PASS')
    .option('--out <file>', 'report JSON (default: grade.json beside the predictions)')
    .option('--data-dir <dir>', 'the grading fleet\'s data (default: the run\'s data beside a run\'s predictions, else grade-data)')
    .option('--repos-dir <dir>', 'where relative dockhand.repo_path values are')
    .option('--runs <n>', 'suite runs per instance (a test whose outcome differs is reported flaky)', positiveInt('--runs'), 1)
    .option('--concurrency <n>', 'instances graded at once', positiveInt('--concurrency'))
    .option('--only <ids>', 'comma-separated instance ids')
    .action(async (instances: string, predictions: string, options: { out?: string; dataDir?: string; reposDir?: string; runs: number; concurrency?: number; only?: string }) => {
      const predictionsFile = mustExist(predictions, 'predictions');
      const file = resolve(options.out ?? join(dirname(predictionsFile), 'grade.json'));
      const model = readFileSync(predictionsFile, 'utf8').match(/"model_name_or_path": "([^"]*)"/)?.[1] ?? 'unknown';
      const stopping = stopOnSignals();
      const summary = await gradePredictions({
        signal: stopping.signal,
        // grade.json holds every grade reached so far: a killed grading keeps them.
        onGrade: (grades) => writeGradeReport(file, { lineErrors: [], grades, resolved: grades.filter((grade) => grade.resolved).length }, model),
        instancesFile: mustExist(instances, 'instances'),
        predictionsFile,
        // Beside a run's predictions: the run's own fleet data (its snapshots are already built).
        dataDir: resolve(options.dataDir ?? (existsSync(join(dirname(predictionsFile), 'run.json')) ? join(dirname(predictionsFile), 'data') : join(dirname(predictionsFile), 'grade-data'))),
        runs: options.runs,
        ...(options.reposDir ? { reposDir: options.reposDir } : {}),
        ...(options.concurrency ? { concurrency: options.concurrency } : {}),
        ...(options.only ? { only: options.only.split(',').map((id) => id.trim()).filter(Boolean) } : {}),
        onProgress: out,
      }).finally(stopping.dispose);
      writeGradeReport(file, summary, model);
      out(`${summary.resolved} of ${summary.grades.length} resolved; report: ${file}`);
      if (stopping.by) {
        out(`stopped by ${stopping.by}: ${summary.grades.length} graded, the rest not (its containers are removed)`);
        process.exit(128 + (stopping.by === 'SIGINT' ? 2 : 15));
      }
    });

  evaluation.command('make <repo-path>')
    .description('instances from a repository: planted bugs and/or commits of its history, each verified fail → pass')
    .requiredOption('--repo <owner/name>', 'the instances\' repo field')
    .requiredOption('--out <file>', 'instances JSONL to write (appended to when it exists; ids already there are kept)')
    .option('--planted <n>', 'planted bugs to keep', positiveInt('--planted'))
    .option('--history <n>', 'commits of history to examine', positiveInt('--history'))
    .option('--sha <commit>', 'commit to start from (default HEAD)')
    .option('--language <name>', 'recorded in dockhand.language')
    .option('--data-dir <dir>', 'the making fleet\'s data (default: make-data beside --out)')
    .action(async (repoPath: string, options: { repo: string; out: string; planted?: number; history?: number; sha?: string; language?: string; dataDir?: string }) => {
      const full = mustExist(repoPath, 'repo-path');
      const outFile = resolve(options.out);
      if (!options.planted && !options.history) throw new DockhandError('bad_request', 'give --planted <n>, --history <n> or both');
      const session = await openEvalSession({ dataDir: resolve(options.dataDir ?? join(dirname(outFile), 'make-data')), scripted: false, runTasks: false });
      let made: EvalInstance[];
      try {
        const result = await makeInstances({
          session, repoPath: full, repo: options.repo, repoPathField: relative(dirname(outFile), full) || '.',
          ...(options.planted ? { planted: options.planted } : {}),
          ...(options.history ? { history: options.history } : {}),
          ...(options.sha ? { sha: options.sha } : {}),
          ...(options.language ? { language: options.language } : {}),
          onProgress: out,
        });
        made = result.instances;
        out(`kept ${made.length}; dropped ${result.dropped.length} candidates`);
      } finally {
        await session.close();
      }
      const existing = existsSync(outFile) ? readInstances(readFileSync(outFile, 'utf8')).records : [];
      const known = new Set(existing.map((instance) => instance.instance_id));
      writeFileSync(outFile, writeInstances([...existing, ...made.filter((instance) => !known.has(instance.instance_id))]));
      out(`instances: ${outFile}`);
    });

  evaluation.command('report <run-dir>')
    .description('Markdown and HTML report of a run (with its grade when given)')
    .option('--grade <file>', 'grade JSON of the run\'s predictions (default: grade.json in the run directory)')
    .action((runDir: string, options: { grade?: string }) => {
      const dir = new RunDirectory(mustExist(runDir, 'run-dir'));
      const gradeFile = options.grade ?? join(dir.path, 'grade.json');
      const report = buildReport(dir, existsSync(gradeFile) ? gradeFile : undefined);
      const files = writeReportFiles(dir, report);
      out(files.markdown);
      out(files.html);
    });

  evaluation.command('compare <run-a> <run-b>')
    .description('two runs on the same instances, paired: resolved in each, and the instances that changed')
    .action((runA: string, runB: string) => {
      const comparison = compareRuns(new RunDirectory(mustExist(runA, 'run-a')), new RunDirectory(mustExist(runB, 'run-b')));
      out(formatComparison(comparison));
    });
}
