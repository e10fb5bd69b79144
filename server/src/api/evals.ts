import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { InstanceResult, RunManifest } from '../eval/run-dir';
import { RUN_ID, runIds, runReport, runVisible, summarize, type RunSummary } from '../eval/runs';
import type { EvalReport } from '../eval/report';
import { maySubmit } from '../runner/registry';
import type { RepoStore, User } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * Evaluation runs (`dockhand eval run --run-dir <runs dir>/<id>`) as JSON: the list with each
 * run's headline figures, and one run's report (per repository and overall, best-of-N, per
 * instance without the patches). Scoped as the metrics are (`runs.ts runVisible`): a run the
 * caller may not see is a 404, exactly as a run that does not exist.
 */

const Interval = z.object({ low: z.number(), high: z.number() });

const RunSummarySchema = z.object({
  id: z.string(),
  mode: z.string(),
  model: z.string(),
  attempts: z.number().int(),
  createdAt: z.string(),
  instances: z.number().int(),
  invalid: z.number().int(),
  graded: z.boolean(),
  resolved: z.number().int(),
  resolvedShare: z.number(),
  interval: Interval,
  reachedReview: z.number().int(),
  costUsd: z.number(),
  costPerResolvedUsd: z.number().nullable(),
  repos: z.array(z.string()),
  passAt1: z.number().int().optional(),
  passAtN: z.number().int().optional(),
}) satisfies z.ZodType<RunSummary>;

const GroupSchema = z.object({
  name: z.string(),
  instances: z.number().int(),
  resolved: z.number().int(),
  resolvedShare: z.number(),
  interval: Interval,
  reachedReview: z.number().int(),
  costUsd: z.number(),
  costPerTaskUsd: z.number(),
  costPerResolvedUsd: z.number().nullable(),
  medianTurns: z.number(),
  medianWallSeconds: z.number(),
  medianQueuedSeconds: z.number(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cacheReadTokens: z.number().int(),
  cacheWriteTokens: z.number().int(),
  cacheReadShare: z.number(),
  policyBlocks: z.number().int(),
  refusedFinishes: z.number().int(),
  invalid: z.number().int(),
});

const RunDetailSchema = z.object({
  summary: RunSummarySchema,
  manifest: RunManifest,
  overall: GroupSchema,
  repos: z.array(GroupSchema),
  attempts: z.object({
    attempts: z.number().int(),
    instances: z.number().int(),
    passAt1: z.number().int(),
    passAtN: z.number().int(),
    reachedReviewAt1: z.number().int(),
    reachedReviewAtN: z.number().int(),
    firstAttemptCostUsd: z.number(),
    allAttemptsCostUsd: z.number(),
    extraCostPerExtraResolvedUsd: z.number().nullable(),
  }).optional(),
  /** Per instance, without `model_patch` and `finalDiff` (the predictions file has them). */
  instances: z.array(InstanceResult.omit({ model_patch: true, finalDiff: true }).extend({ resolved: z.boolean(), gradeStatus: z.string(), flaky: z.array(z.string()) })),
});

const RunParams = z.object({ id: z.string().regex(RUN_ID, 'must be a run id: the name of a run directory (letters, digits, . _ -)') });

/** The runs `user` may see, with their reports (a run whose files cannot be read is left out, and logged). */
export async function visibleRuns(runsDir: string, store: Pick<RepoStore, 'listRepos'>, user: User, onUnreadable?: (id: string, error: unknown) => void): Promise<Array<{ id: string; report: EvalReport }>> {
  const registrations = new Map((await store.listRepos()).map((registration) => [registration.name, registration]));
  const maySubmitTo = (name: string) => {
    const registration = registrations.get(name);
    return registration !== undefined && maySubmit(registration, user);
  };
  return runIds(runsDir).flatMap((id) => {
    try {
      const report = runReport(runsDir, id);
      return report && runVisible(report, user.role === 'admin', maySubmitTo) ? [{ id, report }] : [];
    } catch (error) {
      onUnreadable?.(id, error);
      return [];
    }
  });
}

export async function evalRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const runsDir = deps.evalRunsDir;

  api.get('/evals', {
    schema: { tags: ['evals'], summary: 'Evaluation runs you may see (admins: all), newest first, with resolved share and cost', response: { 200: z.object({ runs: z.array(RunSummarySchema) }) } },
  }, async (request) => {
    const user = requireUser(request);
    if (!runsDir) return { runs: [] };
    const runs = await visibleRuns(runsDir, deps.store, user, (id, error) => request.log.warn({ err: error, run: id }, 'evaluation run unreadable'));
    return { runs: runs.map(({ id, report }) => summarize(id, report)).sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id)) };
  });

  api.get('/evals/:id', {
    schema: { tags: ['evals'], summary: 'One evaluation run: its report as JSON (per repository, overall, best-of-N, per instance)', params: RunParams, response: { 200: RunDetailSchema } },
  }, async (request) => {
    const user = requireUser(request);
    const { id } = request.params;
    const found = runsDir ? (await visibleRuns(runsDir, deps.store, user)).find((run) => run.id === id) : undefined;
    if (!found) throw new DockhandError('not_found', `evaluation run ${id} not found`, { hint: 'GET /v1/evals lists the runs you may see' });
    const { report } = found;
    return {
      summary: summarize(id, report),
      manifest: report.manifest,
      overall: report.overall,
      repos: report.repos,
      ...(report.attempts ? { attempts: report.attempts } : {}),
      instances: report.rows.map(({ model_patch: _patch, finalDiff: _diff, ...row }) => row),
    };
  });
}

function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Eval figures for `/metrics`, one series per run (labels run, mode, model). */
export function evalPrometheusText(runs: RunSummary[]): string {
  const out: string[] = [];
  const metric = (name: string, help: string, rows: Array<[RunSummary, number | null | undefined]>) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [run, value] of rows) if (value !== null && value !== undefined) out.push(`${name}{run="${label(run.id)}",mode="${label(run.mode)}",model="${label(run.model)}"} ${value}`);
  };
  metric('dockhand_eval_instances', 'Instances of an evaluation run with a result', runs.map((run) => [run, run.instances]));
  metric('dockhand_eval_resolved', 'Instances resolved (graded; ungraded: reached review)', runs.map((run) => [run, run.resolved]));
  metric('dockhand_eval_resolved_share', 'Resolved / instances', runs.map((run) => [run, run.resolvedShare]));
  metric('dockhand_eval_graded', '1 when the resolved figures come from a grade, 0 when they are reached review', runs.map((run) => [run, run.graded ? 1 : 0]));
  metric('dockhand_eval_cost_usd', 'Model cost of the run in USD (every attempt)', runs.map((run) => [run, run.costUsd]));
  metric('dockhand_eval_cost_per_resolved_usd', 'Model cost per resolved instance', runs.map((run) => [run, run.costPerResolvedUsd]));
  metric('dockhand_eval_pass_at_1', 'Best-of-N runs: instances resolved by attempt 1', runs.map((run) => [run, run.passAt1]));
  metric('dockhand_eval_pass_at_n', 'Best-of-N runs: instances resolved by the chosen attempt', runs.map((run) => [run, run.passAtN]));
  return `${out.join('\n')}\n`;
}

/** `/metrics`' eval part for `user` ('' without a runs directory). */
export async function evalMetricsText(deps: Pick<AppDeps, 'evalRunsDir' | 'store'>, user: User): Promise<string> {
  if (!deps.evalRunsDir) return '';
  return evalPrometheusText((await visibleRuns(deps.evalRunsDir, deps.store, user)).map(({ id, report }) => summarize(id, report)));
}
