/**
 * `npm run bench:followup` — from a review comment on the local forge to the follow-up commit on
 * the PR's branch (issue 26), on a real `dockhand serve` (gVisor sandboxes, SQLite, the local
 * forge) with the replay model:
 *  1. a task on the buggy-calc fixture opens PR #1 (approved at review);
 *  2. two rounds: a line comment by the requester → the task back to running (comment_to_running:
 *     a warm start at the PR's head, no cold build) → review → approve → the round's push
 *     (comment_to_push); each round must add exactly one commit on the branch;
 *  3. triage of four red checks on the PR's head, one at a time: pre-existing (the same check fails
 *     at the base), flaky (a re-run passes), infrastructure (timed out), caused (passes at the base)
 *     — only the last may start a round (the third, pushed like the others).
 * (A flaky check is posted green first: a red is triaged as it comes, and the local forge cannot
 * ask an outside CI for a re-run, so a re-run that has not come yet cannot count.)
 * The LAST line is one JSON object: comment_to_running_p50_s (target < 5), comment_to_push_p50_s,
 * rounds, pushes_per_round (1), triage_correct (4/4).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { Task, TaskEvent, type TaskState } from '@dockhand/protocol';
import { PullRequestCheckSchema } from '../server/src/forge/checks';
import { PullRequestCommentSchema } from '../server/src/forge/comments';
import { startReplayServer } from '../server/src/model/replay/server';
import { apiJson } from '../test/support/api-json';
import { createFixtureRepo } from '../test/support/fixture-repo';
import { freePort, startDockhandServe } from '../test/support/local-server';
import { createAdminToken, registerRepo } from '../test/support/register-repo';

const ROOT = resolve(import.meta.dirname, '..');
const SESSION = 'bench-followup';
const out = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const round = (n: number) => Math.round(n * 100) / 100;

const edit = (name: string, oldText: string, newText: string) => ({ name, content: [{ type: 'tool_use' as const, name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: oldText, new_text: newText } }] });
const finish = (summary: string) => ({ name: `finish: ${summary}`, content: [{ type: 'tool_use' as const, name: 'finish', input: { summary } }] });

async function main() {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const replay = await startReplayServer({});
  replay.addCassette(SESSION, {
    turns: [
      edit('fix', 'let index = 1;', 'let index = 0;'), finish('average() starts at index 0.'),
      edit('round 2', '/** Arithmetic mean of a list of numbers; 0 for an empty list. */', '/** Arithmetic mean of a list of numbers (every element counts); 0 for an empty list. */'), finish('Doc comment updated.'),
      edit('round 3', 'function add(a, b) {', '/** The sum of a and b. */\nfunction add(a, b) {'), finish('add() documented.'),
      edit('round 4 (the check the PR caused)', 'function subtract(a, b) {', '/** a minus b. */\nfunction subtract(a, b) {'), finish('subtract() documented.'),
    ],
  });
  replay.addCassette(`${SESSION}-review`, { turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Fine.' } }] }] });
  const work = mkdtempSync(join(tmpdir(), 'dockhand-bench-followup-'));
  const dataDir = join(work, 'data');
  const fixture = createFixtureRepo('buggy-calc', join(work, 'buggy-calc'));
  fixture.commit({ 'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n` }, 'lockfile');
  const adminToken = await createAdminToken(dataDir);
  const port = await freePort();
  let server: ChildProcess | undefined;
  try {
    const started = await startDockhandServe(port, { DOCKHAND_DATA_DIR: dataDir, DOCKHAND_MODEL_BASE_URL: replay.url, DOCKHAND_REPLAY_SESSION: SESSION, DOCKHAND_POLL_MS: '200', DOCKHAND_LOG_LEVEL: 'warn', DOCKHAND_RATE_LIMIT_PER_MINUTE: '100000' });
    server = started.child;
    const url = `http://127.0.0.1:${port}`;
    const api = <T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown) => apiJson(url, adminToken, method, path, schema, body);
    const events = async (id: string) => (await api('GET', `/v1/tasks/${id}/events?after=0&limit=10000`, z.object({ events: z.array(TaskEvent) }))).events;
    const until = async <T>(what: string, probe: () => Promise<T | undefined>, ms = 300_000): Promise<T> => {
      const end = Date.now() + ms;
      for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${started.output().slice(-3000)}`);
        await new Promise((done) => setTimeout(done, 100));
      }
    };
    const inState = (id: string, state: TaskState) => until(state, async () => {
      const task = await api('GET', `/v1/tasks/${id}`, Task);
      if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state)) throw new Error(`task ended ${task.state}: ${task.error}`);
      return task.state === state ? task : undefined;
    });
    await registerRepo(url, adminToken, 'calc', fixture.path);
    const { id } = await api('POST', '/v1/tasks', z.object({ id: z.string() }), { ticket: { kind: 'text', title: 'average() is off by one' }, context: { repo: 'calc', baseSha: fixture.sha } });
    await inState(id, 'awaiting_review');
    await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
    await inState(id, 'pr_open');
    const bare = join(dataDir, 'forge', 'calc.git');
    const opened = (await events(id)).find((e) => e.type === 'pr.opened');
    const branch = opened?.type === 'pr.opened' ? opened.data.branch : '';
    const commits = () => Number(execFileSync('git', ['-C', bare, 'rev-list', '--count', `${fixture.sha}..refs/heads/${branch}`], { encoding: 'utf8' }).trim());

    const toRunning: number[] = [];
    const toPush: number[] = [];
    const pushesPerRound: number[] = [];
    /** Waits for the round a comment or check started, approves it, and measures it. */
    const measureRound = async (start: number) => {
      const before = commits();
      await until('running', async () => ((await api('GET', `/v1/tasks/${id}`, Task)).state === 'running' ? true : undefined));
      toRunning.push((Date.now() - start) / 1000);
      await inState(id, 'awaiting_review');
      await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
      await inState(id, 'pr_open');
      toPush.push((Date.now() - start) / 1000);
      pushesPerRound.push(commits() - before);
    };
    for (const [line, text] of [[15, 'Say in the doc comment that every element counts.'], [15, 'Document add() too.']] as const) {
      const start = Date.now();
      await api('POST', '/v1/repos/calc/pulls/1/comments', PullRequestCommentSchema, { body: text, path: 'src/calc.js', line });
      await measureRound(start);
      out(`round ${toRunning.length + 1}: comment → running ${round(toRunning.at(-1)!)} s, → pushed ${round(toPush.at(-1)!)} s, commits ${pushesPerRound.at(-1)}`);
    }

    // Triage, one red at a time on the PR's head (each check name its own).
    const red = ' FAIL  test/calc.test.js > subtract > is documented';
    const triaged = (e: TaskEvent) => e.type === 'pr.feedback' && e.data.check !== undefined;
    const feedbackCount = async () => (await events(id)).filter(triaged).length;
    const cases: Array<{ expect: string; post: () => Promise<void> }> = [
      { expect: 'pre_existing', post: async () => {
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/lint', conclusion: 'failure', log: 'lint: 3 problems', sha: fixture.sha });
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/lint', conclusion: 'failure', log: 'lint: 3 problems' });
      } },
      { expect: 'flaky', post: async () => {
        // The passing run first: the follower triages a red as soon as it comes (it cannot ask an outside CI for a re-run).
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/node-18', conclusion: 'success', log: 'ok' });
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/node-18', conclusion: 'failure', log: red });
      } },
      { expect: 'infrastructure', post: async () => {
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/integration', conclusion: 'timed_out', log: 'The job running on runner r1 has exceeded the maximum execution time of 60 minutes.' });
      } },
      { expect: 'caused', post: async () => {
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/test', conclusion: 'success', log: 'ok', sha: fixture.sha });
        await api('POST', '/v1/repos/calc/pulls/1/checks', PullRequestCheckSchema, { name: 'ci/test', conclusion: 'failure', log: red });
      } },
    ];
    let correct = 0;
    for (const triageCase of cases) {
      const count = await feedbackCount();
      const start = Date.now();
      await triageCase.post();
      const feedback = await until('pr.feedback', async () => {
        const all = (await events(id)).filter(triaged);
        return all.length > count ? all.at(-1) : undefined;
      });
      const got = feedback?.type === 'pr.feedback' ? feedback.data.check?.triage : undefined;
      const started = feedback?.type === 'pr.feedback' && feedback.data.kind === 'round';
      const right = got === triageCase.expect && started === (triageCase.expect === 'caused');
      if (right) correct += 1;
      out(`triage ${triageCase.expect}: got ${got ?? 'none'}${started ? ' (round started)' : ''} ${right ? 'ok' : 'WRONG'}`);
      if (started) await measureRound(start);
    }
    const pushes = pushesPerRound.length > 0 ? pushesPerRound.reduce((a, b) => a + b, 0) / pushesPerRound.length : 0;
    out(JSON.stringify({
      comment_to_running_p50_s: round(median(toRunning)),
      comment_to_push_p50_s: round(median(toPush)),
      rounds: toRunning.length,
      pushes_per_round: round(pushes),
      triage_correct: `${correct}/${cases.length}`,
    }));
  } finally {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((done) => server!.once('exit', done));
    }
    await replay.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
