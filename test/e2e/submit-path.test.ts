import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadinessReport } from '@dockhand/protocol';
import { LocalForge } from '../../server/src/forge';
import { SqliteStore } from '../../server/src/store/sqlite';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { startServeSession, type ServeSession } from '../support/serve-session';

/*
 * The README's `submit --repo /path/to/repo`, as written, on a repository whose default branch is
 * `master`: the CLI finds no registration for the path, registers it (the caller is an admin),
 * the server copies its branches to the local forge, the task runs in a gVisor sandbox with the
 * replay model, is approved, pushed, and its PR targets `master`; `dockhand pr merge` merges it.
 * Real pieces: `dockhand serve` and the CLI (the bundles), SQLite, runsc, git, the Anthropic SDK.
 */

const SESSION = 'submit-path';

let session: ServeSession | undefined;
let dataDir: string;
let fixture: FixtureRepo;

// The CLI as it ships (the bundle `npm start` runs), as a user on the server's host would call it.
const cli = (args: string[]) => {
  if (!session) throw new Error('the server did not start');
  return session.cli(args);
};
const serverOutput = () => session?.serverOutput() ?? '';

beforeAll(async () => {
  session = await startServeSession({ name: 'submit-path', replaySession: SESSION, cliTimeoutMs: 8 * 60_000, env: { DOCKHAND_POLL_MS: '200' } });
  dataDir = session.dataDir;
  session.replay.addCassette(SESSION, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } }] },
    ],
  });
  session.replay.addCassette(`${SESSION}-review`, {
    turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct fix.' } }] }],
  });
  // In a directory named like the project, as a developer's checkout is: the registration's name.
  fixture = createFixtureRepo('buggy-calc', join(mkdtempSync(join(tmpdir(), 'dockhand-checkout-')), 'buggy-calc'));
  // Nothing to install, so the snapshot's dependency step is a quick `npm ci`.
  fixture.commit({
    'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n`,
  }, 'lockfile');
  execFileSync('git', ['-C', fixture.path, 'branch', '-m', 'main', 'master']);
}, 10 * 60_000);

afterAll(async () => {
  await session?.stop();
  if (fixture) rmSync(resolve(fixture.path, '..'), { recursive: true, force: true });
});

describe('submit --repo /path/to/repo (README)', () => {
  it('registers the path, runs the task to a PR that targets master, and pr merge merges it', async () => {
    const submitted = await cli(['submit', '--repo', fixture.path, '--title', 'Fix the off-by-one in average', '--approve']);
    expect(submitted.code, `${submitted.output}\n--- server ---\n${serverOutput().slice(-3000)}`).toBe(0);
    expect(submitted.output).toContain(`registered buggy-calc from ${fixture.path} (default branch master)`);
    expect(submitted.output).toMatch(/task t_\S+ submitted/);
    expect(submitted.output).toMatch(/tests green/);
    expect(submitted.output.trimEnd().split('\n').at(-1)).toBe('PR: dockhand-local://buggy-calc/pulls/1');

    const listed = await cli(['repo', 'list']);
    expect(listed.output).toMatch(/buggy-calc\s+master\s+\S*buggy-calc/);

    // A second submit from the same path finds the registration instead of making another.
    const again = await cli(['submit', '--repo', fixture.path, '--title', 'Again', '--no-follow']);
    expect(again.code, again.output).toBe(0);
    expect(again.output).not.toContain('registered');

    const store = new SqliteStore(join(dataDir, 'dockhand.db'));
    try {
      const forge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: store.pullRequests });
      const pr = await forge.getPullRequest('buggy-calc', 1);
      expect(pr.base).toBe('master');
      expect(await forge.defaultBranch('buggy-calc')).toBe('master');
    } finally {
      await store.close();
    }
    const merged = await cli(['pr', 'merge', 'buggy-calc', '1']);
    expect(merged.code, merged.output).toBe(0);
    expect(merged.output).toMatch(/dockhand-local:\/\/buggy-calc\/pulls\/1: merged at [0-9a-f]{40}/);
    const bare = join(dataDir, 'forge', 'buggy-calc.git');
    expect(execFileSync('git', ['-C', bare, 'show', 'master:src/calc.js'], { encoding: 'utf8' })).toContain('let index = 0;');

    // Readiness at the new head of master: the snapshot is found, the suite runs at the base, the graph is built.
    const checked = await cli(['repo', 'check', 'buggy-calc', '--json']);
    expect(checked.code, checked.output).toBe(0);
    const report = ReadinessReport.parse(JSON.parse(checked.output));
    expect(report).toMatchObject({ repo: 'buggy-calc', ready: true, blocking: [], install: { ok: true }, tests: { ok: true, failed: 0 }, selection: { ok: true } });
    expect(report.sha).toBe(execFileSync('git', ['-C', bare, 'rev-parse', 'master'], { encoding: 'utf8' }).trim());
    expect(report.tests.passed).toBeGreaterThanOrEqual(5);
    expect(report.selection.testFiles).toBeGreaterThanOrEqual(1);
    expect(report.snapshot?.startSeconds).toBeGreaterThan(0);
    const table = await cli(['repo', 'check', 'buggy-calc']);
    expect(table.output).toMatch(/^tests at base\s+ok\s+/m);
    expect(table.output).toMatch(/buggy-calc at [0-9a-f]{12} \(the head of master at dockhand-local:\/\/buggy-calc\): READY/);
  }, 20 * 60_000);
});
