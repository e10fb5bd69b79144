import type { Octokit } from '@octokit/rest';
import { HeadAndTail } from '../head-and-tail';
import { CHECK_LOG_HEAD, CHECK_LOG_TAIL } from './checks';
import type { GitHubRepo } from './github-auth';
import type { GitHubFeedback } from './webhook';

/*
 * Red CI on GitHub beyond a check run's own output: commit statuses (the older API outside CIs
 * still use), and the log of a GitHub Actions job, which neither a webhook nor a check run's
 * output carries. For a red workflow run, check suite or Actions check run, the failed jobs are
 * listed and each one's log read (GET …/actions/jobs/{id}/logs answers 302 to a short-lived
 * download URL on another host; the URL is fetched without the token). Only the head and tail of
 * each log are kept as it streams in, so a 100 MB log costs what a trimmed one does.
 *
 * Not read: a commit status's `target_url` (another CI's page, no API to read a log from), a
 * third-party check run's log (only its output text, which the check run already carries).
 */

type CheckFeedback = Extract<GitHubFeedback, { kind: 'check' }>;

/** A commit status as GitHub's REST answer and its `status` delivery name its fields. */
export interface RestCommitStatus {
  id: number;
  state: string;
  context: string;
  description?: string | null;
  target_url?: string | null;
  created_at: string;
  updated_at: string;
}

/** The conclusion of a status as a check's; undefined while it is pending. `error` (the CI could not run it) is red as `failure` is. */
const STATUS_CONCLUSIONS: Record<string, string> = { success: 'success', failure: 'failure', error: 'failure' };

export function commitStatusFeedback(repo: string, sha: string, status: RestCommitStatus): CheckFeedback | undefined {
  const conclusion = STATUS_CONCLUSIONS[status.state];
  if (!conclusion) return undefined;
  return {
    kind: 'check',
    repo,
    numbers: [],
    source: 'status',
    id: status.id,
    name: status.context,
    headSha: sha,
    conclusion,
    ...(status.target_url ? { url: status.target_url } : {}),
    log: `commit status ${status.state}${status.description ? `: ${status.description}` : ''}`,
    completedAt: status.updated_at || status.created_at,
  };
}

/** Conclusions of a job that failed it. */
const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'startup_failure']);

/** Jobs whose logs are read for one red run; the rest are named. */
export const MAX_JOB_LOGS = 3;

export interface JobLogOptions {
  /** The fetch that reads the download URL (the forge's, so tests can give theirs). */
  fetch: typeof fetch;
  /** Bound on each download (default 20 s). */
  timeoutMs?: number;
}

export interface FailedJobsLog {
  /** The failed jobs' logs, each trimmed head and tail, under a `Job <name> (<conclusion>)` line. */
  log: string;
  /** Every failed job timed out or was cancelled: the run's own conclusion says less. */
  conclusion?: 'timed_out' | 'cancelled';
}

interface Job {
  id: number;
  name: string;
  conclusion: string | null;
  steps?: Array<{ name: string; conclusion: string | null; number: number }> | null;
}

/** An Actions log line begins with its timestamp, and colour codes ride along: neither names a test. */
const TIMESTAMP = /^\uFEFF?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?/;
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** A job log as triage reads it: timestamps and colour codes off, `##[error]` kept as words. */
export function actionsLogText(raw: string): string {
  return raw
    .split('\n')
    .map((line) => line.replace(/\r$/, '').replace(TIMESTAMP, '').replace(ANSI, '').replace(/^##\[(error|warning)\]/, '$1: ').replace(/^##\[(?:group|endgroup|debug|command)\]/, ''))
    .join('\n');
}

/** One job's log through its 302: head and tail kept; undefined when GitHub has none (404/410: expired, or the job never started). */
export async function readJobLog(octokit: Octokit, repo: GitHubRepo, jobId: number, options: JobLogOptions): Promise<string | undefined> {
  let location: string | undefined;
  try {
    // Manual: the download URL is read by us, without the API token (it is signed and on another host).
    const answer = await octokit.rest.actions.downloadJobLogsForWorkflowRun({ owner: repo.owner, repo: repo.name, job_id: jobId, request: { redirect: 'manual' } });
    location = typeof answer.headers.location === 'string' ? answer.headers.location : undefined;
    if (!location && typeof answer.data === 'string') return trimmedLog([answer.data]);
  } catch (error) {
    if (error instanceof Error && 'status' in error && (error.status === 404 || error.status === 410)) return undefined;
    throw error;
  }
  if (!location) return undefined;
  const response = await options.fetch(location, { signal: AbortSignal.timeout(options.timeoutMs ?? 20_000) });
  if (response.status === 404 || response.status === 410) return undefined;
  if (!response.ok || !response.body) throw new Error(`the job ${jobId}'s log download answered ${response.status}`);
  const decoder = new TextDecoder();
  const chunks: AsyncIterable<Uint8Array> = response.body;
  const text: string[] = [];
  for await (const chunk of chunks) text.push(decoder.decode(chunk, { stream: true }));
  text.push(decoder.decode());
  return trimmedLog(text);
}

function trimmedLog(chunks: readonly string[]): string {
  const kept = new HeadAndTail<string>({ head: CHECK_LOG_HEAD / 2, tail: CHECK_LOG_TAIL / 2, slice: (chunk, start, end) => chunk.slice(start, end) });
  for (const chunk of chunks) kept.push(chunk);
  const cut = kept.dropped > 0 ? `\n[… ${kept.dropped} characters of the job's log cut …]\n` : '';
  return actionsLogText(`${kept.head.join('')}${cut}${kept.tail.join('')}`);
}

function jobHeading(job: Job): string {
  const failedStep = job.steps?.find((step) => step.conclusion !== null && FAILED.has(step.conclusion));
  return `Job ${job.name} (${job.conclusion ?? 'unknown'})${failedStep ? `, step ${failedStep.number} "${failedStep.name}" ${failedStep.conclusion}` : ''}`;
}

async function jobsLog(octokit: Octokit, repo: GitHubRepo, jobs: readonly Job[], options: JobLogOptions): Promise<FailedJobsLog | undefined> {
  const failed = jobs.filter((job) => job.conclusion !== null && FAILED.has(job.conclusion));
  if (failed.length === 0) return undefined;
  const parts: string[] = [];
  for (const job of failed.slice(0, MAX_JOB_LOGS)) {
    const log = await readJobLog(octokit, repo, job.id, options).catch((error: unknown) => `(its log could not be read: ${error instanceof Error ? error.message : String(error)})`);
    // Only a job's own steps tell that it never ran (a check run read as a job has none listed).
    const ranNoStep = job.steps ? !job.steps.some((step) => step.conclusion !== null && step.conclusion !== 'skipped') : false;
    const none = ranNoStep ? '(GitHub has no log for it, and it ran no step: the runner was lost or never started)' : '(GitHub has no log for it: it expired, or the job never started)';
    parts.push(`${jobHeading(job)}\n${log ?? none}`);
  }
  if (failed.length > MAX_JOB_LOGS) parts.push(`Also failed (logs not read): ${failed.slice(MAX_JOB_LOGS).map((job) => job.name).join(', ')}`);
  const conclusions = new Set(failed.map((job) => job.conclusion));
  const only = conclusions.size === 1 ? [...conclusions][0] : undefined;
  return { log: parts.join('\n\n'), ...(only === 'timed_out' || only === 'cancelled' ? { conclusion: only } : {}) };
}

/**
 * The failed jobs' logs behind a red check, where GitHub Actions ran it: a workflow run's jobs
 * (its latest attempt), a check suite's check runs (an Actions check run's id is its job's id), or
 * an Actions check run itself. Undefined for anything else (a status, another app's check).
 */
export async function failedJobsLog(octokit: Octokit, repo: GitHubRepo, check: CheckFeedback, options: JobLogOptions): Promise<FailedJobsLog | undefined> {
  const where = { owner: repo.owner, repo: repo.name };
  switch (check.source) {
    case 'workflow_run': {
      const { data } = await octokit.rest.actions.listJobsForWorkflowRun({ ...where, run_id: check.id, filter: 'latest', per_page: 100 });
      return jobsLog(octokit, repo, data.jobs, options);
    }
    case 'check_suite': {
      if (!check.fromActions) return undefined;
      const { data } = await octokit.rest.checks.listForSuite({ ...where, check_suite_id: check.id, filter: 'latest', per_page: 100 });
      return jobsLog(octokit, repo, data.check_runs.map((run) => ({ id: run.id, name: run.name, conclusion: run.conclusion })), options);
    }
    case 'check_run':
      if (!check.fromActions) return undefined;
      return jobsLog(octokit, repo, [{ id: check.id, name: check.name, conclusion: check.conclusion }], options);
    default:
      return undefined;
  }
}
