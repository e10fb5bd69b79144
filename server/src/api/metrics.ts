import type { FastifyInstance } from 'fastify';
import type { Task, TaskEvent } from '@dockhand/protocol';
import type { DependencyCacheMetrics } from '../sandbox/dep-cache';
import type { RepoStore, Store, User } from '../store/types';
import { requireUser } from './auth';
import { evalMetricsText } from './evals';
import type { AppDeps } from './deps';

/*
 * Outcome metrics, per repo and model: tasks, PRs opened, merge rate, 14-day revert rate, median
 * reviewer time, tokens, cache-read share, cost per task and per merged PR, turns that waited
 * for the fleet's model rate budget and how long. Computed from the
 * event log on request (fine for one server's history; a fleet would keep rollups instead).
 */

const DAY_MS = 86_400_000;

export interface MetricsGroup {
  repo: string;
  model: string;
  tasks: number;
  tasksByState: Record<string, number>;
  prsOpened: number;
  prsMerged: number;
  prsReverted14d: number;
  mergeRate: number | null;
  revertRate14d: number | null;
  medianReviewerSeconds: number | null;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  cacheReadShare: number | null;
  costUsd: number;
  costPerTaskUsd: number | null;
  costPerMergedPrUsd: number | null;
  /** Turns that waited for the fleet's model rate budget, and their waits in all (seconds). */
  budgetWaits: number;
  budgetWaitSeconds: number;
  /** After the PR opened (issue 26): follow-up rounds, PRs that needed one, and how many of those merged. */
  followUpRounds: number;
  prsWithRounds: number;
  prsMergedWithRounds: number;
  roundsPerMergedPr: number | null;
  mergeRateWithRounds: number | null;
  /** Median time from what started a round (its `pr.feedback`) to the round's push. */
  medianFollowUpPushSeconds: number | null;
  /** Red checks triaged, by class (caused, pre_existing, flaky, infrastructure). */
  checksTriaged: Record<string, number>;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? null) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b);

export function computeMetrics(tasks: Task[], events: TaskEvent[]): MetricsGroup[] {
  const byTask = new Map<string, TaskEvent[]>();
  for (const event of events) {
    const list = byTask.get(event.taskId) ?? [];
    list.push(event);
    byTask.set(event.taskId, list);
  }
  const groups = new Map<string, { group: MetricsGroup; reviewSeconds: number[]; pushSeconds: number[]; roundsOfMerged: number }>();
  for (const task of tasks) {
    const log = byTask.get(task.id) ?? [];
    const firstTurn = log.find((e) => e.type === 'model.turn');
    const model = firstTurn?.type === 'model.turn' ? firstTurn.data.model : 'none';
    const key = `${task.context.repo}\u0000${model}`;
    let entry = groups.get(key);
    if (!entry) {
      entry = {
        reviewSeconds: [],
        pushSeconds: [],
        roundsOfMerged: 0,
        group: {
          repo: task.context.repo, model, tasks: 0, tasksByState: {}, prsOpened: 0, prsMerged: 0, prsReverted14d: 0,
          mergeRate: null, revertRate14d: null, medianReviewerSeconds: null,
          tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, cacheReadShare: null, costUsd: 0,
          costPerTaskUsd: null, costPerMergedPrUsd: null, budgetWaits: 0, budgetWaitSeconds: 0,
          followUpRounds: 0, prsWithRounds: 0, prsMergedWithRounds: 0, roundsPerMergedPr: null, mergeRateWithRounds: null,
          medianFollowUpPushSeconds: null, checksTriaged: {},
        },
      };
      groups.set(key, entry);
    }
    const g = entry.group;
    g.tasks += 1;
    g.tasksByState[task.state] = (g.tasksByState[task.state] ?? 0) + 1;
    g.tokens.input += task.usage.inputTokens;
    g.tokens.output += task.usage.outputTokens;
    g.tokens.cacheRead += task.usage.cacheReadTokens;
    g.tokens.cacheWrite += task.usage.cacheWriteTokens;
    g.costUsd += task.usage.costUsd;
    let mergedAt: number | undefined;
    let reviewStart: number | undefined;
    let rounds = 0;
    const roundStarted = new Map<number, number>();
    for (const event of log) {
      if (event.type === 'pr.feedback') {
        if (event.data.check) g.checksTriaged[event.data.check.triage] = (g.checksTriaged[event.data.check.triage] ?? 0) + 1;
        if (event.data.kind === 'round' && event.data.round !== undefined) {
          rounds += 1;
          roundStarted.set(event.data.round, Date.parse(event.ts));
        }
      }
      const roundAt = event.type === 'pr.pushed' ? roundStarted.get(event.data.round) : undefined;
      if (roundAt !== undefined) entry.pushSeconds.push((Date.parse(event.ts) - roundAt) / 1000);
      const at = Date.parse(event.ts);
      if (event.type === 'pr.opened') g.prsOpened += 1;
      if (event.type === 'model.budget_wait' && event.data.phase === 'done') {
        g.budgetWaits += 1;
        g.budgetWaitSeconds += event.data.waitMs / 1000;
      }
      if (event.type === 'pr.outcome' && event.data.outcome === 'merged') {
        g.prsMerged += 1;
        mergedAt = Date.parse(event.data.at);
      }
      if (event.type === 'pr.outcome' && event.data.outcome === 'reverted' && mergedAt !== undefined) {
        if (Date.parse(event.data.at) - mergedAt <= 14 * DAY_MS) g.prsReverted14d += 1;
      }
      if (event.type === 'pr.outcome' && event.data.outcome === 'merged' && rounds > 0) g.prsMergedWithRounds += 1;
      if (event.type === 'task.state' && event.data.state === 'awaiting_review') reviewStart = at;
      const decided =
        (event.type === 'task.state' && reviewStart !== undefined && event.data.state !== 'awaiting_review') ||
        event.type === 'review.requested_changes';
      if (decided && reviewStart !== undefined) {
        entry.reviewSeconds.push((at - reviewStart) / 1000);
        reviewStart = undefined;
      }
    }
    g.followUpRounds += rounds;
    if (rounds > 0) g.prsWithRounds += 1;
    if (mergedAt !== undefined) entry.roundsOfMerged += rounds;
  }
  return [...groups.values()].map(({ group, reviewSeconds, pushSeconds, roundsOfMerged }) => {
    const promptTokens = group.tokens.input + group.tokens.cacheRead + group.tokens.cacheWrite;
    return {
      ...group,
      mergeRate: ratio(group.prsMerged, group.prsOpened),
      revertRate14d: ratio(group.prsReverted14d, group.prsMerged),
      medianReviewerSeconds: median(reviewSeconds),
      cacheReadShare: ratio(group.tokens.cacheRead, promptTokens),
      costPerTaskUsd: ratio(group.costUsd, group.tasks),
      costPerMergedPrUsd: ratio(group.costUsd, group.prsMerged),
      roundsPerMergedPr: ratio(roundsOfMerged, group.prsMerged),
      mergeRateWithRounds: ratio(group.prsMergedWithRounds, group.prsWithRounds),
      medianFollowUpPushSeconds: median(pushSeconds),
    };
  });
}

function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function prometheusText(groups: MetricsGroup[]): string {
  const out: string[] = [];
  const metric = (name: string, help: string, type: 'gauge' | 'counter', rows: Array<[string, number | null]>) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows) if (value !== null) out.push(`${name}{${labels}} ${value}`);
  };
  const base = (g: MetricsGroup) => `repo="${label(g.repo)}",model="${label(g.model)}"`;
  metric('dockhand_tasks', 'Tasks by repo, model and state', 'gauge',
    groups.flatMap((g) => Object.entries(g.tasksByState).map(([state, n]): [string, number] => [`${base(g)},state="${state}"`, n])));
  metric('dockhand_prs_opened_total', 'Pull requests opened', 'counter', groups.map((g) => [base(g), g.prsOpened]));
  metric('dockhand_prs_merged_total', 'Pull requests merged', 'counter', groups.map((g) => [base(g), g.prsMerged]));
  metric('dockhand_merge_rate', 'Merged / opened pull requests', 'gauge', groups.map((g) => [base(g), g.mergeRate]));
  metric('dockhand_revert_rate_14d', 'Merged pull requests reverted within 14 days / merged', 'gauge', groups.map((g) => [base(g), g.revertRate14d]));
  metric('dockhand_reviewer_time_median_seconds', 'Median time from awaiting_review to a decision', 'gauge', groups.map((g) => [base(g), g.medianReviewerSeconds]));
  metric('dockhand_tokens_total', 'Model tokens by kind', 'counter', groups.flatMap((g) => [
    [`${base(g)},kind="input"`, g.tokens.input], [`${base(g)},kind="output"`, g.tokens.output],
    [`${base(g)},kind="cache_read"`, g.tokens.cacheRead], [`${base(g)},kind="cache_write"`, g.tokens.cacheWrite],
  ] satisfies Array<[string, number]>));
  metric('dockhand_cache_read_share', 'Share of prompt tokens read from cache', 'gauge', groups.map((g) => [base(g), g.cacheReadShare]));
  metric('dockhand_cost_usd_total', 'Model cost in USD', 'counter', groups.map((g) => [base(g), g.costUsd]));
  metric('dockhand_cost_per_task_usd', 'Model cost per task', 'gauge', groups.map((g) => [base(g), g.costPerTaskUsd]));
  metric('dockhand_cost_per_merged_pr_usd', 'Model cost per merged pull request', 'gauge', groups.map((g) => [base(g), g.costPerMergedPrUsd]));
  metric('dockhand_model_budget_waits_total', "Model turns that waited for the fleet's model rate budget", 'counter', groups.map((g) => [base(g), g.budgetWaits]));
  metric('dockhand_model_budget_wait_seconds_total', "Time model turns waited for the fleet's model rate budget", 'counter', groups.map((g) => [base(g), g.budgetWaitSeconds]));
  metric('dockhand_followup_rounds_total', 'Follow-up rounds after PRs opened (review comments, red checks the PR caused)', 'counter', groups.map((g) => [base(g), g.followUpRounds]));
  metric('dockhand_rounds_per_merged_pr', 'Follow-up rounds per merged pull request', 'gauge', groups.map((g) => [base(g), g.roundsPerMergedPr]));
  metric('dockhand_merge_rate_with_rounds', 'Merged / opened among pull requests that needed a follow-up round', 'gauge', groups.map((g) => [base(g), g.mergeRateWithRounds]));
  metric('dockhand_followup_push_median_seconds', "Median time from a round's start (the comment or red check) to its push", 'gauge', groups.map((g) => [base(g), g.medianFollowUpPushSeconds]));
  metric('dockhand_checks_triaged_total', 'Red checks on followed PRs, by triage class', 'counter',
    groups.flatMap((g) => Object.entries(g.checksTriaged).map(([triage, n]): [string, number] => [`${base(g)},triage="${triage}"`, n])));
  return `${out.join('\n')}\n`;
}

/**
 * The node's dependency cache: this process's counts since it started and what it keeps now. Its
 * tarballs serve every repository's builds, so the series carry no repo label and only admins see
 * them (a user's view is scoped to their own tasks).
 */
export function dependencyCacheText(cache: DependencyCacheMetrics): string {
  const series = (name: string, help: string, type: 'gauge' | 'counter', rows: Array<[string, number]>) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    ...rows.map(([labels, value]) => `${name}${labels ? `{${labels}}` : ''} ${value}`),
  ];
  return `${[
    ...series('dockhand_dep_cache_hits_total', "Package tarballs snapshot builds read from the node's dependency cache", 'counter', [['', cache.stats.hits]]),
    ...series('dockhand_dep_cache_misses_total', 'Package tarballs the dependency cache fetched from the upstream registry', 'counter', [['', cache.stats.misses]]),
    ...series('dockhand_dep_cache_bytes_total', 'Tarball bytes the dependency cache served, by where they came from', 'counter', [
      ['source="cache"', cache.stats.bytesFromCache],
      ['source="upstream"', cache.stats.bytesFromUpstream],
    ]),
    ...series('dockhand_dep_cache_kept_bytes', 'Bytes of tarballs the dependency cache keeps on disk', 'gauge', [['', cache.keptBytes]]),
    ...series('dockhand_dep_cache_max_bytes', "The dependency cache's bound (DOCKHAND_DEP_CACHE_MAX_GIB)", 'gauge', [['', cache.maxBytes]]),
  ].join('\n')}\n`;
}

async function dependencyCacheFor(deps: Pick<AppDeps, 'dependencyCache'>, user: User): Promise<DependencyCacheMetrics | undefined> {
  return user.role === 'admin' ? deps.dependencyCache?.() : undefined;
}

async function allTasks(store: Store, owner: string | undefined): Promise<Task[]> {
  const tasks: Task[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listTasks({ limit: 200, ...(owner === undefined ? {} : { owner }), ...(cursor ? { cursor } : {}) });
    tasks.push(...page.tasks);
    cursor = page.nextCursor;
  } while (cursor);
  return tasks;
}

/** The `repo` label of a task: its registered name, or one fixed value (label values never come from raw input). */
export const UNREGISTERED_REPO_LABEL = '(unregistered)';

/**
 * Metrics as `user` may see them: an admin every task, anyone else their own tasks only. The repo
 * label is a registered repository's name; tasks of repositories not (or no longer) registered
 * share one label, so the label's cardinality is bounded by the registry.
 */
export async function loadMetrics(store: Store & Pick<RepoStore, 'listRepos'>, user: User): Promise<MetricsGroup[]> {
  const events = await store.eventsOfTypes(['model.turn', 'model.budget_wait', 'pr.opened', 'pr.outcome', 'task.state', 'review.requested_changes', 'pr.feedback', 'pr.pushed']);
  const registered = new Set((await store.listRepos()).map((registration) => registration.name));
  const tasks = (await allTasks(store, user.role === 'admin' ? undefined : user.name)).map((task) =>
    registered.has(task.context.repo) ? task : { ...task, context: { ...task.context, repo: UNREGISTERED_REPO_LABEL } });
  const visible = new Set(tasks.map((task) => task.id));
  return computeMetrics(tasks, events.filter((event) => visible.has(event.taskId)));
}

/** `GET /v1/metrics` (JSON) and `GET /metrics` (Prometheus text); both need a token and are scoped to the caller. */
export async function metricsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  app.get('/v1/metrics', { schema: { tags: ['metrics'], summary: "Outcome metrics of your tasks (admins: all tasks and the node's dependency cache)" } }, async (request) => {
    const user = requireUser(request);
    const dependencyCache = await dependencyCacheFor(deps, user);
    return { groups: await loadMetrics(deps.store, user), ...(dependencyCache ? { dependencyCache } : {}) };
  });
  app.get('/metrics', { schema: { tags: ['metrics'], hide: true } }, async (request, reply) => {
    const user = requireUser(request);
    const groups = await loadMetrics(deps.store, user);
    const dependencyCache = await dependencyCacheFor(deps, user);
    return reply
      .type('text/plain; version=0.0.4')
      .send(prometheusText(groups) + (await evalMetricsText(deps, user)) + (dependencyCache ? dependencyCacheText(dependencyCache) : ''));
  });
}
