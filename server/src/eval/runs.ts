import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildReport, gradeFileOf, type EvalReport } from './report';
import { RunDirectory } from './run-dir';
import { registeredName } from './names';

/*
 * The evaluation runs a server shows (`GET /v1/evals`, `/metrics`): every directory directly under
 * its runs directory (`DOCKHAND_EVAL_RUNS_DIR`, default `<data>/evals`) that holds a `run.json`;
 * a run's id is its directory's name. `dockhand eval run … --run-dir <runs>/<id>` puts one there.
 * Runs are read from disk on request (a report is a few files); nothing about them is stored.
 */

/** A run id: a directory name (never a path: no slashes, no leading dot). */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export interface RunSummary {
  id: string;
  mode: string;
  model: string;
  attempts: number;
  createdAt: string;
  /** Instances with a result so far (a run still going has fewer than its file). */
  instances: number;
  invalid: number;
  graded: boolean;
  /** Resolved (graded), else reached review. */
  resolved: number;
  resolvedShare: number;
  interval: { low: number; high: number };
  reachedReview: number;
  costUsd: number;
  costPerResolvedUsd: number | null;
  /** SWE-bench repositories (`owner/name`) of its instances. */
  repos: string[];
  passAt1?: number;
  passAtN?: number;
}

export function runIds(runsDir: string): string[] {
  if (!existsSync(runsDir)) return [];
  return readdirSync(runsDir)
    .filter((name) => RUN_ID.test(name) && statSync(join(runsDir, name)).isDirectory() && existsSync(join(runsDir, name, 'run.json')))
    .sort();
}

export function runReport(runsDir: string, id: string): EvalReport | undefined {
  if (!RUN_ID.test(id) || !runIds(runsDir).includes(id)) return undefined;
  const dir = new RunDirectory(join(runsDir, id));
  return buildReport(dir, gradeFileOf(dir));
}

export function summarize(id: string, report: EvalReport): RunSummary {
  const { overall } = report;
  return {
    id,
    mode: report.manifest.mode,
    model: report.manifest.model,
    attempts: report.manifest.attempts,
    createdAt: report.manifest.createdAt,
    instances: overall.instances,
    invalid: overall.invalid,
    graded: report.graded,
    resolved: overall.resolved,
    resolvedShare: overall.resolvedShare,
    interval: overall.interval,
    reachedReview: overall.reachedReview,
    costUsd: overall.costUsd,
    costPerResolvedUsd: overall.costPerResolvedUsd,
    repos: report.repos.map((group) => group.name),
    ...(report.attempts ? { passAt1: report.attempts.passAt1, passAtN: report.attempts.passAtN } : {}),
  };
}

/**
 * Whether a user sees a run, scoped as the task metrics are: admins every run; anyone else a run
 * only when every repository of it is one they may submit to here (by the name the evaluation
 * registers it under, `owner__name`). A run with no instances yet is for admins.
 */
export function runVisible(report: EvalReport, isAdmin: boolean, maySubmitTo: (name: string) => boolean): boolean {
  if (isAdmin) return true;
  return report.repos.length > 0 && report.repos.every((group) => maySubmitTo(registeredName(group.name)));
}
