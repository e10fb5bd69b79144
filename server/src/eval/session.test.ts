import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeSandboxProvider } from '../runner/testing/fakes';
import { ensureRepository, openEvalSession, type EvalSession } from './session';

/*
 * The registration an evaluation makes is the local forge's copy of the source's branches at that
 * moment. Bases committed to the source afterwards (a rebuilt corpus repository, a new instance's
 * branch) must still reach a grading sandbox, which asks the mirror directly (no task submission
 * in between to refresh the copy). Real git, SQLite, registry, local forge and mirror; only the
 * sandbox is the in-memory one (the mirror is asked first, as the real service asks it).
 */

const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();

let dir: string;
let source: string;
let session: EvalSession;

function commit(file: string, text: string, message: string): string {
  writeFileSync(join(source, file), text);
  git(source, 'add', '-A');
  git(source, 'commit', '-q', '-m', message);
  return git(source, 'rev-parse', 'HEAD');
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dockhand-eval-session-'));
  source = join(dir, 'source');
  mkdirSync(source);
  git(source, 'init', '-q', '-b', 'main');
  session = await openEvalSession({
    dataDir: join(dir, 'data'),
    scripted: false,
    runTasks: false,
    parts: { sandboxes: { provider: new FakeSandboxProvider(), close: async () => undefined } },
  });
});

afterEach(async () => {
  await session.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ensureRepository', () => {
  it('brings bases committed to the source after the registration into its copy, so a grading sandbox finds them', { timeout: 30_000 }, async () => {
    const first = commit('a.txt', 'one\n', 'first');
    expect(await ensureRepository(session, 'owner__lib', source, first)).toBe('owner__lib');
    const acquire = (baseSha: string) => session.sandboxes.provider.acquire({ repo: 'owner__lib', baseSha, taskId: `grade-${baseSha.slice(0, 8)}` });
    await expect(acquire(first)).resolves.toMatchObject({ source: 'snapshot' });

    // An instance's base on a branch of its own, made after the registration.
    git(source, 'checkout', '-q', '-b', 'eval/owner__lib-p001');
    const branched = commit('a.txt', 'one\nbug\n', 'planted');
    // The source rebuilt: main replaced by an unrelated history (the forge's copy never moves a branch backwards or sideways).
    git(source, 'checkout', '-q', '--orphan', 'rebuilt');
    const rebuilt = commit('a.txt', 'rebuilt\n', 'rebuilt');
    git(source, 'branch', '-q', '-f', 'main', rebuilt);
    git(source, 'checkout', '-q', 'main');
    git(source, 'branch', '-q', '-D', 'rebuilt');

    // Straight from the registration's copy, neither commit is there.
    await expect(acquire(branched)).rejects.toThrow(/not/);
    for (const sha of [branched, rebuilt]) {
      expect(await ensureRepository(session, 'owner__lib', source, sha)).toBe('owner__lib');
      await expect(acquire(sha)).resolves.toMatchObject({ source: 'snapshot' });
    }
  });

  it('names the base commit when the source does not have it either', async () => {
    commit('a.txt', 'one\n', 'first');
    await expect(ensureRepository(session, 'owner__lib', source, 'f'.repeat(40))).rejects.toThrow(/context\.baseSha: commit f{40} is not in owner__lib/);
  });

  it('refuses a name registered on this fleet from another source', async () => {
    const first = commit('a.txt', 'one\n', 'first');
    await ensureRepository(session, 'owner__lib', source, first);
    const other = join(dir, 'other');
    execFileSync('git', ['clone', '-q', source, other], { env });
    await expect(ensureRepository(session, 'owner__lib', other, first)).rejects.toThrow(/registered on this fleet from .*source, not .*other/);
  });
});
