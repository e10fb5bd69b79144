import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Task, TaskEvent, type TaskState } from '@dockhand/protocol';
import { apiJson } from '../support/api-json';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { startServeSession, type ServeSession } from '../support/serve-session';

/*
 * Issue 26 through the README's commands, on the local forge with gVisor and the replay model:
 * a PR opens → a reviewer's line comment (`dockhand pr comment --path --line`) → round 2 at the
 * PR's head → `dockhand approve` → ONE follow-up commit on the same branch → a reply on that
 * thread → `dockhand pr review --approve` → `dockhand pr merge`. Real pieces: `dockhand serve`
 * and the CLI (the bundles), SQLite, runsc, git, the Anthropic SDK against the replay server.
 */

const SESSION = 'pr-followup';
const DOC = '/** Arithmetic mean of a list of numbers; 0 for an empty list. */';
const DOC_AFTER = '/** Arithmetic mean of a list of numbers (every element counts); 0 for an empty list. */';

let session: ServeSession | undefined;
let fixture: FixtureRepo;

const cli = (args: string[]) => {
  if (!session) throw new Error('the server did not start');
  return session.cli(args);
};

async function waitForState(taskId: string, wanted: TaskState, timeoutMs = 8 * 60_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await apiJson(session!.url, session!.adminToken, 'GET', `/v1/tasks/${taskId}`, Task);
    if (task.state === wanted) return task;
    if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state) || Date.now() > deadline) {
      throw new Error(`task ${taskId} is ${task.state}, waited for ${wanted}\n--- server ---\n${session!.serverOutput().slice(-3000)}`);
    }
    await new Promise((done) => setTimeout(done, 300));
  }
}

beforeAll(async () => {
  session = await startServeSession({ name: SESSION, replaySession: SESSION, cliTimeoutMs: 8 * 60_000, env: { DOCKHAND_POLL_MS: '200' } });
  session.replay.addCassette(SESSION, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } }] },
      { name: 'round 2', expect: { userTextContains: 'say so in the doc comment' }, content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: DOC, new_text: DOC_AFTER } }] },
      { name: 'finish round 2', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'The doc comment says every element counts.' } }] },
    ],
  });
  session.replay.addCassette(`${SESSION}-review`, {
    turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct change.' } }] }],
  });
  fixture = createFixtureRepo('buggy-calc', join(mkdtempSync(join(tmpdir(), 'dockhand-checkout-')), 'buggy-calc'));
  fixture.commit({
    'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n`,
  }, 'lockfile');
}, 10 * 60_000);

afterAll(async () => {
  await session?.stop();
  if (fixture) rmSync(resolve(fixture.path, '..'), { recursive: true, force: true });
});

describe('following a PR after it opens (issue 26)', () => {
  it('a line comment → round 2 → one follow-up commit on the branch → a reply on the thread → approve → merged', async () => {
    const submitted = await cli(['submit', '--repo', fixture.path, '--title', 'Fix the off-by-one in average', '--approve']);
    expect(submitted.code, `${submitted.output}\n--- server ---\n${session!.serverOutput().slice(-3000)}`).toBe(0);
    const taskId = /task (t_\S+) submitted/.exec(submitted.output)?.[1];
    expect(submitted.output.trimEnd().split('\n').at(-1)).toBe('PR: dockhand-local://buggy-calc/pulls/1');
    const bare = join(session!.dataDir, 'forge', 'buggy-calc.git');
    const git = (...args: string[]) => execFileSync('git', ['-C', bare, ...args], { encoding: 'utf8' }).trim();
    const branch = git('for-each-ref', '--format=%(refname:strip=2)', 'refs/heads/dockhand/');
    const firstHead = git('rev-parse', `refs/heads/${branch}`);

    const commented = Date.now();
    const comment = await cli(['pr', 'comment', 'buggy-calc', '1', '--path', 'src/calc.js', '--line', '15', 'Starting at 0 is right; say so in the doc comment too.']);
    expect(comment.code, comment.output).toBe(0);
    expect(comment.output).toMatch(/^#1 root comment on src\/calc.js:15 — steers the task/m);
    await waitForState(taskId!, 'running', 60_000);
    const toRunningSeconds = (Date.now() - commented) / 1000;
    await waitForState(taskId!, 'awaiting_review');
    const approved = await cli(['approve', taskId!]);
    expect(approved.code, approved.output).toBe(0);
    await waitForState(taskId!, 'pr_open');
    const pushedSeconds = (Date.now() - commented) / 1000;

    const head = git('rev-parse', `refs/heads/${branch}`);
    expect(git('rev-parse', `${head}^`)).toBe(firstHead);
    const roundDiff = git('diff', firstHead, head);
    expect(roundDiff).toContain(`+${DOC_AFTER}`);
    expect(roundDiff).not.toContain('let index');
    expect(git('show', `${head}:src/calc.js`)).toContain('let index = 0;');

    const checks = await cli(['pr', 'checks', 'buggy-calc', '1']);
    expect(checks.output).toMatch(new RegExp(`^#2 dockhand reply to #1.*$`, 'm'));
    expect(checks.output).toContain(`(resolved by ${head.slice(0, 12)})`);
    const events = await apiJson(session!.url, session!.adminToken, 'GET', `/v1/tasks/${taskId}/events`, z.object({ events: z.array(TaskEvent) }));
    expect(events.events.filter((event) => event.type === 'pr.pushed')).toMatchObject([{ data: { round: 2, headSha: head, commit: true, replied: [1] } }]);

    const review = await cli(['pr', 'review', 'buggy-calc', '1', '--approve', 'Thanks']);
    expect(review.output).toMatch(/review \(approved\)/);
    const merged = await cli(['pr', 'merge', 'buggy-calc', '1']);
    expect(merged.code, merged.output).toBe(0);
    expect(git('show', 'main:src/calc.js')).toContain(DOC_AFTER);
    process.stdout.write(`pr-followup: comment_to_running_s=${toRunningSeconds.toFixed(1)} comment_to_push_s=${pushedSeconds.toFixed(1)}\n`);
  }, 20 * 60_000);
});
