import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentInput, AgentResult } from '../runner/ports';
import { FakeSandboxProvider, ScriptedAgent, editLikeTheAgent } from '../runner/testing/fakes';
import { attemptFigures, attemptOfUrl, chooseAttempt } from './attempts';
import { readPredictions } from './formats';
import { buildReport, reportMarkdown } from './report';
import { runEvaluation } from './run';
import { RunDirectory, type InstanceResult } from './run-dir';

/*
 * `eval run --attempts N` through the real fleet (SQLite store, API, scheduler, leases, task
 * runner, policy gate, registry and local forge), with the in-memory sandbox and a scripted agent
 * in place of gVisor and the loop, so each attempt can be made to succeed, fail or hang.
 */

const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();

function attemptResult(attempt: number, reachedReview: boolean, costUsd: number, patch = ''): InstanceResult {
  return {
    instance_id: 'x', repo: 'o/x', status: 'settled', taskId: `t${attempt}`, state: reachedReview ? 'awaiting_review' : 'failed', reachedReview,
    ...(reachedReview ? {} : { stopReason: 'model_error: no' }),
    model_patch: patch, policy: { checked: true, ok: reachedReview, blocked: false, violations: [] }, refusedFinishes: 1, turns: 3,
    costUsd, inputTokens: 10, outputTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 1, wallSeconds: 10 * attempt, attempt,
  };
}

describe('choosing among attempts', () => {
  it('takes the first attempt that reached review, with every attempt\'s cost summed and the longest wall time', () => {
    const chosen = chooseAttempt([attemptResult(3, true, 0.3, 'c'), attemptResult(1, false, 0.1), attemptResult(2, true, 0.2, 'b')]);
    expect(chosen).toMatchObject({ attempt: 2, reachedReview: true, model_patch: 'b', taskId: 't2', costUsd: 0.6000000000000001, turns: 9, inputTokens: 30, refusedFinishes: 3, wallSeconds: 30 });
    expect(chosen.attempts?.map((attempt) => [attempt.attempt, attempt.reachedReview, attempt.costUsd])).toEqual([[1, false, 0.1], [2, true, 0.2], [3, true, 0.3]]);
  });

  it('keeps attempt 1 (and why it stopped) when none reached review', () => {
    expect(chooseAttempt([attemptResult(2, false, 0.2), attemptResult(1, false, 0.1)])).toMatchObject({ attempt: 1, reachedReview: false, model_patch: '', stopReason: 'model_error: no' });
  });

  it('pass@1 counts an instance only when attempt 1 is the one resolved', () => {
    const row = (attempts: InstanceResult[], resolved: boolean) => ({ ...chooseAttempt(attempts), resolved });
    const figures = attemptFigures(2, [
      row([attemptResult(1, true, 0.1, 'a'), attemptResult(2, true, 0.2, 'b')], true),
      row([attemptResult(1, false, 0.1), attemptResult(2, true, 0.2, 'b')], true),
      row([attemptResult(1, false, 0.1), attemptResult(2, false, 0.2)], false),
    ]);
    expect(figures).toMatchObject({ attempts: 2, instances: 3, passAt1: 1, passAtN: 2, reachedReviewAt1: 1, reachedReviewAtN: 2 });
    expect(figures.firstAttemptCostUsd).toBeCloseTo(0.3);
    expect(figures.allAttemptsCostUsd).toBeCloseTo(0.9);
    expect(figures.extraCostPerExtraResolvedUsd).toBeCloseTo(0.6);
  });

  it('reads the attempt from a ticket URL', () => {
    expect(attemptOfUrl('dockhand-eval://run/x')).toBe(1);
    expect(attemptOfUrl('dockhand-eval://run/x?attempt=3')).toBe(3);
  });
});

describe('eval run --attempts 2 on the fleet', () => {
  let dir: string;
  let repoPath: string;
  let instancesFile: string;
  const saved = { lease: process.env.DOCKHAND_LEASE_SECONDS, poll: process.env.DOCKHAND_POLL_MS };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dockhand-eval-attempts-'));
    repoPath = join(dir, 'repo');
    mkdirSync(join(repoPath, 'src'), { recursive: true });
    writeFileSync(join(repoPath, 'src/a.ts'), 'one\ntwo\nthree\n');
    git(repoPath, 'init', '-q', '-b', 'main');
    git(repoPath, 'add', '-A');
    git(repoPath, 'commit', '-q', '-m', 'base');
    const sha = git(repoPath, 'rev-parse', 'HEAD');
    const instance = (id: string) => JSON.stringify({
      repo: 'owner/lib', instance_id: id, base_commit: sha, problem_statement: `Fix ${id}`, test_patch: '',
      FAIL_TO_PASS: '["a.test.ts > two is loud"]', PASS_TO_PASS: '[]', dockhand: { repo_path: 'repo' },
    });
    instancesFile = join(dir, 'instances.jsonl');
    writeFileSync(instancesFile, `${instance('lib-1')}\n${instance('lib-2')}\n`);
    // A task left running by a stopped run is taken over once its lease runs out.
    process.env.DOCKHAND_LEASE_SECONDS = '3';
    process.env.DOCKHAND_POLL_MS = '50';
  });

  afterAll(() => {
    process.env.DOCKHAND_LEASE_SECONDS = saved.lease;
    process.env.DOCKHAND_POLL_MS = saved.poll;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs every attempt once, side by side, chooses the first that reached review, and resumes a stopped run without running a settled attempt again', { timeout: 60_000 }, async () => {
    const runDir = join(dir, 'run');
    const ran: string[] = [];
    let releaseHung: () => void = () => undefined;
    const hung = new Promise<void>((done) => (releaseHung = done));
    const finish = async (input: AgentInput, to: string): Promise<AgentResult> => {
      await editLikeTheAgent(input, 'two', to);
      return { outcome: 'finished', summary: `Made two ${to}.`, diff: await input.sandbox.diff() };
    };
    // lib-1: attempt 1 fails, attempt 2 fixes it. lib-2: attempt 1 fixes it, attempt 2 hangs until the next run.
    const script = (run: number) => async (input: AgentInput): Promise<AgentResult> => {
      const ticket = input.task.ticket;
      const key = `${ticket.kind === 'issue' ? ticket.id : '?'}#${attemptOfUrl(ticket.kind === 'issue' ? ticket.url : undefined)}`;
      ran.push(`${run}:${key}`);
      if (key === 'lib-1#1') return { outcome: 'failed', summary: 'gave up', diff: '', error: { code: 'model_error', message: 'gave up' } };
      if (key === 'lib-2#2' && run === 1) {
        await Promise.race([hung, new Promise((done) => input.signal.addEventListener('abort', done, { once: true }))]);
        return { outcome: 'cancelled', summary: 'stopped', diff: '' };
      }
      return finish(input, key === 'lib-1#2' ? 'TWO' : 'Two');
    };
    const parts = (run: number) => ({ sandboxes: { provider: new FakeSandboxProvider(), close: async () => undefined }, agent: new ScriptedAgent(script(run)) });

    // Run 1: stopped once three attempts have settled (lib-2's second still running).
    const stop = new AbortController();
    const watcher = setInterval(() => {
      const settled = ['lib-1.attempt-1', 'lib-1.attempt-2', 'lib-2.attempt-1'].filter((name) => existsSync(join(runDir, 'attempts', `${name}.json`)));
      if (settled.length === 3) stop.abort();
    }, 50);
    const first = await runEvaluation({ instancesFile, runDir, mode: 'model', attempts: 2, concurrency: 4, signal: stop.signal, sessionParts: parts(1) });
    clearInterval(watcher);
    releaseHung();
    expect([...ran].sort()).toEqual(['1:lib-1#1', '1:lib-1#2', '1:lib-2#1', '1:lib-2#2']);
    expect(first.results.map((result) => [result.instance_id, result.attempt, result.reachedReview])).toEqual([['lib-1', 2, true]]);
    const settledBytes = readFileSync(join(runDir, 'attempts', 'lib-2.attempt-1.json'), 'utf8');
    const settledAt = statSync(join(runDir, 'attempts', 'lib-2.attempt-1.json')).mtimeMs;

    // Run 2 resumes: only lib-2's running attempt is worked on again; nothing settled is re-run.
    const second = await runEvaluation({ instancesFile, runDir, mode: 'model', attempts: 2, concurrency: 4, sessionParts: parts(2) });
    expect(ran.filter((entry) => entry.startsWith('2:'))).toEqual(['2:lib-2#2']);
    expect(second.resumedDone).toBe(1);
    expect(second.settled).toBe(1);
    expect(readFileSync(join(runDir, 'attempts', 'lib-2.attempt-1.json'), 'utf8')).toBe(settledBytes);
    expect(statSync(join(runDir, 'attempts', 'lib-2.attempt-1.json')).mtimeMs).toBe(settledAt);
    expect(second.results.map((result) => [result.instance_id, result.attempt, result.attempts?.map((attempt) => attempt.reachedReview)])).toEqual([
      ['lib-1', 2, [false, true]],
      ['lib-2', 1, [true, true]],
    ]);
    // The chosen attempts' diffs are the predictions.
    const predictions = readPredictions(readFileSync(second.predictionsFile, 'utf8')).records;
    expect(predictions.map((prediction) => [prediction.instance_id, /\+TWO/.test(prediction.model_patch), /\+Two/.test(prediction.model_patch)])).toEqual([['lib-1', true, false], ['lib-2', false, true]]);

    // A third run has nothing to do; asking it for another number of attempts is refused.
    const third = await runEvaluation({ instancesFile, runDir, mode: 'model', attempts: 2, sessionParts: parts(3) });
    expect([third.settled, third.resumedDone, ran.filter((entry) => entry.startsWith('3:')).length]).toEqual([0, 2, 0]);
    await expect(runEvaluation({ instancesFile, runDir, mode: 'model', attempts: 3, sessionParts: parts(4) })).rejects.toThrow(/attempts 2, not 3/);

    // The report: pass@1 (ungraded: reached review) 1 of 2, pass@2 2 of 2.
    const report = buildReport(new RunDirectory(runDir));
    expect(report.attempts).toMatchObject({ attempts: 2, passAt1: 1, passAtN: 2, reachedReviewAt1: 1, reachedReviewAtN: 2 });
    expect(reportMarkdown(report)).toMatch(/Best of 2: pass@1 1\/2 \(50\.0%\), pass@2 2\/2 \(100\.0%\) reached review \(ungraded\)/);
  });
});
