import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhooks } from '@octokit/webhooks';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GitHubForge, GitHubWebhookReceiver, staticToken } from '../forge';
import { GitHubThreads } from '../forge/github-threads';
import { openApiProblems, type RestCall } from '../forge/testing/github-openapi';
import { SqliteStore } from '../store/sqlite';
import { triageCheck } from './triage';

/*
 * Red CI on GitHub beyond check runs (#26): a commit status and a failed workflow run or check
 * suite, as GitHub's published example deliveries (@octokit/webhooks-examples; adapted: the
 * conclusion or state made red, named where a test does), recorded by `GitHubThreads` with the
 * GitHub forge talking to a real HTTP server on loopback. That server answers the jobs of a run
 * and, for a job's log, 302 to a second server (the download host) — so the log is read by
 * following a real redirect, and what the download host received is checked: no API token.
 * Every request to the API server is judged by GitHub's OpenAPI description.
 */

const SECRET = 'webhook-secret-for-tests-0123456789';
const TOKEN = 'ghs_ci_test_token_0123456789';
const signer = new Webhooks({ secret: SECRET });
const receiver = new GitHubWebhookReceiver(SECRET);

type Payload = Record<string, unknown> & { action?: string };
function example(name: string, action: string | undefined): Payload {
  const definition = (examples as unknown as Array<{ name: string; examples: Payload[] }>).find((entry) => entry.name === name);
  const found = definition?.examples.find((payload) => payload.action === action);
  if (!found) throw new Error(`no published ${name}.${action ?? ''} example`);
  return structuredClone(found);
}

async function receive(name: string, payload: Payload) {
  const body = JSON.stringify(payload);
  const items = await receiver.receive({ headers: { 'x-github-event': name, 'x-github-delivery': crypto.randomUUID(), 'x-hub-signature-256': await signer.sign(body) }, rawBody: body });
  return items.flatMap((item) => (item.kind === 'check' ? [item] : []));
}

/** An Actions job log as GitHub serves it: a timestamp on every line, colour codes, `##[…]` commands. */
function actionsLog(lines: readonly string[], padding = 0): string {
  const stamp = (line: string) => `2026-12-05T01:02:03.4567890Z ${line}`;
  const filler = Array.from({ length: padding }, (_, index) => stamp(`  ✓ test/other.test.js > case ${index} 1ms`));
  return ['\uFEFF' + stamp('##[group]Run npm test'), stamp('npm test'), stamp('##[endgroup]'), ...filler, ...lines.map(stamp)].join('\n');
}

const api = { calls: [] as Array<RestCall & { authorization?: string }>, jobs: new Map<number, unknown[]>(), suiteRuns: new Map<number, unknown[]>(), statuses: new Map<string, unknown[]> };
const download = { requests: [] as Array<{ path: string; authorization?: string }>, logs: new Map<number, string>() };
let apiServer: Server;
let downloadServer: Server;
let apiUrl = '';
let downloadUrl = '';

function json(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(value));
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function bodyOf(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

beforeAll(async () => {
  apiServer = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', apiUrl);
      api.calls.push({ method: request.method ?? 'GET', path: url.pathname, query: url.searchParams, body: await bodyOf(request), ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}) });
      const jobs = /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/jobs$/.exec(url.pathname);
      if (jobs) return json(response, 200, { total_count: api.jobs.get(Number(jobs[1]))?.length ?? 0, jobs: api.jobs.get(Number(jobs[1])) ?? [] });
      const log = /^\/repos\/[^/]+\/[^/]+\/actions\/jobs\/(\d+)\/logs$/.exec(url.pathname);
      if (log) {
        if (!download.logs.has(Number(log[1]))) return json(response, 404, { message: 'Not Found' });
        // GitHub answers with a short-lived signed URL on another host.
        response.writeHead(302, { location: `${downloadUrl}/job-logs/${log[1]}?sig=signed-for-one-minute` }).end();
        return;
      }
      const suite = /^\/repos\/[^/]+\/[^/]+\/check-suites\/(\d+)\/check-runs$/.exec(url.pathname);
      if (suite) return json(response, 200, { total_count: api.suiteRuns.get(Number(suite[1]))?.length ?? 0, check_runs: api.suiteRuns.get(Number(suite[1])) ?? [] });
      const status = /^\/repos\/[^/]+\/[^/]+\/commits\/([0-9a-f]{40})\/status$/.exec(url.pathname);
      if (status) return json(response, 200, { state: 'failure', sha: status[1], total_count: api.statuses.get(status[1]!)?.length ?? 0, statuses: api.statuses.get(status[1]!) ?? [] });
      json(response, 404, { message: 'Not Found' });
    })();
  });
  downloadServer = createServer((request, response) => {
    download.requests.push({ path: request.url ?? '', ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}) });
    const id = Number(/^\/job-logs\/(\d+)/.exec(request.url ?? '')?.[1]);
    const text = download.logs.get(id);
    if (text === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    // Sent in pieces, as a large log arrives.
    const bytes = Buffer.from(text);
    for (let start = 0; start < bytes.length; start += 64 * 1024) response.write(bytes.subarray(start, start + 64 * 1024));
    response.end();
  });
  apiUrl = await listen(apiServer);
  downloadUrl = await listen(downloadServer);
});

afterAll(async () => {
  await new Promise((resolve) => apiServer.close(resolve));
  await new Promise((resolve) => downloadServer.close(resolve));
});

const stores: SqliteStore[] = [];
afterEach(async () => {
  expect(api.calls.flatMap(openApiProblems)).toEqual([]);
  // The API got the token; the download host never did.
  expect(api.calls.every((call) => call.authorization === `token ${TOKEN}`)).toBe(true);
  expect(download.requests.filter((request) => request.authorization !== undefined)).toEqual([]);
  api.calls.length = 0;
  api.jobs.clear();
  api.suiteRuns.clear();
  api.statuses.clear();
  download.requests.length = 0;
  download.logs.clear();
  for (const store of stores.splice(0)) await store.close();
});

function threads(): { threads: GitHubThreads; store: SqliteStore; forge: GitHubForge } {
  const store = new SqliteStore(':memory:');
  stores.push(store);
  const forge = new GitHubForge({ tokens: staticToken(TOKEN), baseUrl: apiUrl });
  return { threads: new GitHubThreads({ forge, store: store.prThreads }), store, forge };
}

function failedWorkflowRun(): { payload: Payload; run: { id: number; head_sha: string; name: string }; repo: string } {
  const payload = example('workflow_run', 'completed');
  const run = payload.workflow_run as { id: number; head_sha: string; name: string; conclusion: string | null; status: string };
  run.conclusion = 'failure';
  run.status = 'completed';
  return { payload, run, repo: (payload.repository as { full_name: string }).full_name };
}

const step = (number: number, name: string, conclusion: string | null) => ({ number, name, conclusion, status: 'completed', started_at: null, completed_at: null });
function job(id: number, name: string, conclusion: string, steps: unknown[]) {
  return { id, run_id: 1, name, status: 'completed', conclusion, head_sha: '', steps, html_url: `https://github.com/o/r/actions/runs/1/job/${id}` };
}

describe('red CI on GitHub beyond check runs reaches triage with its job logs (#26)', () => {
  it('a failed workflow run: its failed job\'s log is read through the 302, trimmed, its test lines become the repository\'s test ids, and triage finds the PR caused it', async () => {
    const { payload, run, repo } = failedWorkflowRun();
    const [delivered] = await receive('workflow_run', payload);
    expect(delivered).toMatchObject({ source: 'workflow_run', id: run.id, conclusion: 'failure', fromActions: true });
    api.jobs.set(run.id, [
      job(11, 'lint', 'success', [step(1, 'Set up job', 'success')]),
      job(12, 'test (node 22)', 'failure', [step(1, 'Set up job', 'success'), step(4, 'npm test', 'failure')]),
    ]);
    // 60,000 passing lines (about 3.6 MB) before the failure: only the head and tail are kept.
    download.logs.set(12, actionsLog([' \u001b[31m❯\u001b[39m test/paginate.test.js (3 tests | 1 failed) 12ms', '   \u001b[31m×\u001b[39m paginate > returns a full page 5ms', '##[error]Process completed with exit code 1.'], 60_000));
    const { threads: t, store } = threads();
    const check = await t.record(delivered!);
    expect(check).toBeDefined();
    const [stored] = await store.prThreads.listChecks(repo, run.head_sha);
    expect(stored).toMatchObject({ name: run.name, conclusion: 'failure', forgeKind: 'workflow_run', forgeId: run.id });
    expect(stored!.log).toContain('Job test (node 22) (failure), step 4 "npm test" failure');
    expect(stored!.log).toContain('error: Process completed with exit code 1.');
    expect(stored!.log).not.toMatch(/2026-12-05T01:02:03/);
    expect(stored!.log).not.toContain('lint');
    expect(stored!.log.length).toBeLessThan(20_000);
    // The log was read through the redirect, from the download host.
    expect(download.requests.map((request) => request.path)).toEqual(['/job-logs/12?sig=signed-for-one-minute']);
    expect(api.calls.map((call) => `${call.method} ${call.path}`)).toEqual([`GET /repos/${repo}/actions/runs/${run.id}/jobs`, `GET /repos/${repo}/actions/jobs/12/logs`]);
    const triage = triageCheck({ check: stored!, headChecks: [stored!], baseChecks: [] });
    expect(triage).toMatchObject({ triage: 'caused', failingTests: ['test/paginate.test.js > paginate > returns a full page'] });
    // A delivery GitHub retries is one record, and no log is read twice.
    expect(await t.record(delivered!)).toBeUndefined();
    expect(download.requests).toHaveLength(1);
  });

  it('a run whose job exceeded its time, or whose runner was lost before any step, is infrastructure', async () => {
    const { payload, run, repo } = failedWorkflowRun();
    const [delivered] = await receive('workflow_run', payload);
    api.jobs.set(run.id, [job(21, 'test', 'failure', [step(1, 'Set up job', 'success'), step(2, 'npm ci', 'cancelled')])]);
    download.logs.set(21, actionsLog(['added 812 packages in 40s', '##[error]The job running on runner GitHub Actions 3 has exceeded the maximum execution time of 10 minutes.', '##[error]The operation was canceled.']));
    const { threads: t, store } = threads();
    await t.record(delivered!);
    const [timedOut] = await store.prThreads.listChecks(repo, run.head_sha);
    expect(triageCheck({ check: timedOut!, headChecks: [timedOut!], baseChecks: [] })).toMatchObject({ triage: 'infrastructure', evidence: expect.stringContaining('exceeded the maximum execution time') });

    // The runner lost: the job failed with no step run and GitHub has no log for it.
    const lost = failedWorkflowRun();
    const runLost = lost.run;
    runLost.id += 1;
    runLost.head_sha = 'c'.repeat(40);
    api.jobs.set(runLost.id, [job(22, 'test', 'failure', [step(1, 'Set up job', null)])]);
    const [lostDelivery] = await receive('workflow_run', lost.payload);
    await t.record(lostDelivery!);
    const [stored] = await store.prThreads.listChecks(repo, runLost.head_sha);
    expect(stored!.log).toContain('the runner was lost or never started');
    expect(triageCheck({ check: stored!, headChecks: [stored!], baseChecks: [] }).triage).toBe('infrastructure');
  });

  it('a cancelled job makes the recorded check cancelled; a failed Actions check suite reads its failed check runs\' job logs', async () => {
    const suitePayload = example('check_suite', 'completed');
    const suite = suitePayload.check_suite as { id: number; head_sha: string; conclusion: string; app: { slug?: string } };
    suite.conclusion = 'failure';
    suite.app.slug = 'github-actions';
    const repo = (suitePayload.repository as { full_name: string }).full_name;
    const [delivered] = await receive('check_suite', suitePayload);
    expect(delivered).toMatchObject({ source: 'check_suite', fromActions: true });
    api.suiteRuns.set(suite.id, [
      { id: 31, name: 'build', status: 'completed', conclusion: 'success' },
      { id: 32, name: 'test', status: 'completed', conclusion: 'failure' },
    ]);
    download.logs.set(32, actionsLog(['FAIL src/sum.test.js', '  ● sum › subtracts', '    expect(received).toBe(expected)']));
    const { threads: t, store } = threads();
    await t.record(delivered!);
    const [stored] = await store.prThreads.listChecks(repo, suite.head_sha);
    expect(triageCheck({ check: stored!, headChecks: [stored!], baseChecks: [] })).toMatchObject({ triage: 'caused', failingTests: ['src/sum.test.js > sum > subtracts'] });
    expect(api.calls.map((call) => `${call.method} ${call.path}`)).toEqual([`GET /repos/${repo}/check-suites/${suite.id}/check-runs`, `GET /repos/${repo}/actions/jobs/32/logs`]);

    const { payload, run } = failedWorkflowRun();
    run.head_sha = 'd'.repeat(40);
    api.jobs.set(run.id, [job(41, 'test', 'cancelled', [step(1, 'Set up job', 'success'), step(2, 'npm test', 'cancelled')])]);
    download.logs.set(41, actionsLog(['##[error]The operation was canceled.']));
    const [cancelled] = await receive('workflow_run', payload);
    await t.record(cancelled!);
    const [recorded] = await store.prThreads.listChecks((payload.repository as { full_name: string }).full_name, run.head_sha);
    expect(recorded).toMatchObject({ conclusion: 'cancelled' });
  });

  it('commit statuses: a failure or error delivery is a red check on its commit, pending is nothing; the poll reads GET …/commits/{ref}/status', async () => {
    const payload = example('status', undefined);
    const repo = (payload.repository as { full_name: string }).full_name;
    const sha = payload.sha as string;
    Object.assign(payload, { state: 'failure', context: 'ci/jenkins', description: 'Tests failed: 3 of 120', target_url: 'https://ci.example.test/job/9' });
    const [red] = await receive('status', payload);
    expect(red).toMatchObject({ source: 'status', name: 'ci/jenkins', headSha: sha, conclusion: 'failure', numbers: [], url: 'https://ci.example.test/job/9' });
    expect(await receive('status', { ...payload, id: (payload.id as number) + 1, state: 'error' })).toMatchObject([{ conclusion: 'failure', log: expect.stringContaining('commit status error') }]);
    expect(await receive('status', { ...payload, state: 'pending' })).toEqual([]);

    const { threads: t, store, forge } = threads();
    await t.record(red!);
    const [stored] = await store.prThreads.listChecks(repo, sha);
    expect(stored).toMatchObject({ name: 'ci/jenkins', conclusion: 'failure', forgeKind: 'status', log: expect.stringContaining('Tests failed: 3 of 120') });
    // No job log for a status: another CI's page is not GitHub's to read.
    expect(download.requests).toEqual([]);

    const base = 'b'.repeat(40);
    api.statuses.set(base, [
      { id: 71, state: 'success', context: 'ci/jenkins', description: null, target_url: null, created_at: '2026-12-05T00:00:00Z', updated_at: '2026-12-05T00:00:00Z' },
      { id: 72, state: 'pending', context: 'ci/lint', description: null, target_url: null, created_at: '2026-12-05T00:00:00Z', updated_at: '2026-12-05T00:00:00Z' },
    ]);
    const polled = await forge.commitStatuses(repo, base);
    expect(polled).toMatchObject([{ source: 'status', id: 71, conclusion: 'success', headSha: base }]);
    for (const item of polled) await t.record(item);
    const atBase = await store.prThreads.listChecks(repo, base);
    expect(triageCheck({ check: stored!, headChecks: [stored!], baseChecks: atBase })).toMatchObject({ triage: 'caused', evidence: expect.stringContaining('passes at the base') });
    expect(api.calls.map((call) => `${call.method} ${call.path}`)).toEqual([`GET /repos/${repo}/commits/${base}/status`]);
  });
});
