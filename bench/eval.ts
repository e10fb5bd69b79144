/**
 * Evaluation harness benchmark: `npm run bench:eval`.
 *
 * The internal set (test/eval/internal/instances.jsonl; its repositories rebuilt by
 * scripts/eval/internal-set.ts at the same SHAs) run three times through the real pipeline with
 * the replay model — gold (applies each instance's fix through edit_file), null (claims done
 * without a change), cheat (edits the tests) — then graded in fresh gVisor sandboxes; gold is
 * graded twice to measure whether grading gives the same answer. One fleet data directory is
 * shared by the runs and the grades, so each repository's snapshot is built once.
 *
 * Options (environment): EVAL_INSTANCES (another instances file), EVAL_ONLY (comma-separated
 * ids), EVAL_CONCURRENCY (default 2), EVAL_WORK (the runs, repositories and fleet data; default
 * /var/tmp/dockhand-bench-eval, kept so snapshots are reused; a run already finished there resumes
 * with nothing to do), EVAL_FRESH=1 (run every mode again).
 *
 * Last line: {"instances", "gold_resolved_share", "null_resolved_share", "cheat_resolved_share",
 * "grade_repeat_agreement", "median_instance_s", "cost_per_resolved_usd", ...}
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildInternalRepos, INTERNAL_SET, materializeInstances } from '../scripts/eval/internal-set';
import { readInstances } from '../server/src/eval/formats';
import { gradePredictions, writeGradeReport, type GradeSummary } from '../server/src/eval/grade';
import { buildReport, reportMarkdown, writeReportFiles } from '../server/src/eval/report';
import { runEvaluation } from '../server/src/eval/run';
import { RunDirectory } from '../server/src/eval/run-dir';
import { median } from '../server/src/eval/stats';

const ROOT = resolve(import.meta.dirname, '..');
const committedSet = resolve(process.env.EVAL_INSTANCES ?? INTERNAL_SET);
const only = process.env.EVAL_ONLY ? process.env.EVAL_ONLY.split(',').map((id) => id.trim()).filter(Boolean) : undefined;
const concurrency = Number(process.env.EVAL_CONCURRENCY ?? 2);
// Kept between runs (outside the checkout): the fleet's data, so snapshots and toolchains are reused.
const work = resolve(process.env.EVAL_WORK ?? '/var/tmp/dockhand-bench-eval');
mkdirSync(work, { recursive: true });
const reposDir = join(work, 'repos');
const dataDir = join(work, 'fleet-data');
const log = (line: string) => process.stdout.write(`${line}\n`);

// The corpus (built if missing), the fixtures, and every instance's base commit on this machine.
const instancesFile = materializeInstances(committedSet, reposDir, buildInternalRepos(reposDir, log), log, join(work, 'instances.jsonl'));
const origins = new Map(readInstances(readFileSync(instancesFile, 'utf8')).records.map((instance) => [instance.instance_id, instance.dockhand?.origin ?? 'planted']));
const modes = ['gold', 'null', 'cheat'] as const;
const grades: Record<string, GradeSummary> = {};
const shares: Record<string, number> = {};
let instances = 0;
for (const mode of modes) {
  const started = Date.now();
  const runDir = join(work, `run-${mode}`);
  // A finished run is not run again (its results are kept); EVAL_FRESH=1 starts over.
  if (process.env.EVAL_FRESH === '1') rmSync(runDir, { recursive: true, force: true });
  const summary = await runEvaluation({ instancesFile, runDir, mode, reposDir, dataDir, concurrency, ...(only ? { only } : {}), onProgress: (line) => log(`[${mode}] ${line}`) });
  instances = summary.instances;
  const grade = await gradePredictions({ instancesFile, predictionsFile: summary.predictionsFile, dataDir, reposDir, concurrency, ...(only ? { only } : {}), onProgress: (line) => log(`[${mode} grade] ${line}`) });
  writeGradeReport(join(runDir, 'grade.json'), grade, `dockhand-replay/${mode}`);
  grades[mode] = grade;
  shares[mode] = summary.instances ? grade.resolved / summary.instances : 0;
  const report = buildReport(new RunDirectory(runDir), join(runDir, 'grade.json'));
  writeReportFiles(new RunDirectory(runDir), report);
  log(`\n## ${mode} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
  log(reportMarkdown(report).split('\n## Instances')[0] ?? '');
}

// Grading the same gold predictions again must give the same verdict for every instance.
const again = await gradePredictions({ instancesFile, predictionsFile: join(work, 'run-gold', 'predictions.jsonl'), dataDir, reposDir, concurrency, ...(only ? { only } : {}), onProgress: (line) => log(`[gold regrade] ${line}`) });
const first = new Map((grades.gold?.grades ?? []).map((grade) => [grade.instance_id, `${grade.status}`]));
const agreeing = again.grades.filter((grade) => first.get(grade.instance_id) === grade.status).length;
const goldReport = buildReport(new RunDirectory(join(work, 'run-gold')), join(work, 'run-gold', 'grade.json'));
const goldRows = goldReport.rows.filter((row) => row.status === 'settled');
const byOrigin = (origin: string) => goldReport.rows.filter((row) => origins.get(row.instance_id) === origin).length;

log(JSON.stringify({
  instances,
  repos: goldReport.repos.length,
  planted: byOrigin('planted'),
  history: byOrigin('history'),
  gold_resolved_share: Number((shares.gold ?? 0).toFixed(3)),
  null_resolved_share: Number((shares.null ?? 0).toFixed(3)),
  cheat_resolved_share: Number((shares.cheat ?? 0).toFixed(3)),
  grade_repeat_agreement: Number((again.grades.length ? agreeing / again.grades.length : 0).toFixed(3)),
  flaky_tests: again.grades.reduce((total, grade) => total + grade.flaky.length, 0),
  median_instance_s: Number(median(goldRows.map((row) => row.wallSeconds)).toFixed(1)),
  // Of an instance's wall time, the wait for one of the fleet's `concurrency` slots, and the rest (sandbox start included).
  median_instance_queued_s: Number(median(goldRows.map((row) => row.queuedSeconds ?? 0)).toFixed(1)),
  median_instance_run_s: Number(median(goldRows.map((row) => row.wallSeconds - (row.queuedSeconds ?? 0))).toFixed(1)),
  gold_sandbox_sources: Object.fromEntries(['cold', 'snapshot', 'warm_pool'].map((source) => [source, goldRows.filter((row) => row.sandbox?.source === source).length])),
  median_gold_sandbox_start_s: Number((median(goldRows.flatMap((row) => (row.sandbox ? [row.sandbox.startMs / 1000] : []))) || 0).toFixed(1)),
  concurrency,
  cost_per_resolved_usd: goldReport.overall.costPerResolvedUsd === null ? null : Number(goldReport.overall.costPerResolvedUsd.toFixed(4)),
  cheat_policy_or_stop_blocks: grades.cheat?.grades.filter((grade) => !grade.resolved).length ?? 0,
  work,
}));
