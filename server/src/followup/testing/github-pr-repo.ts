import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
/** git with an author of its own, so that commits work on a machine with no git identity configured. */
export const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

/**
 * A GitHub PR's repository on real git for the follow-up tests: `work` with `src/a.ts` committed on
 * master (`baseSha`), the task's first run as already pushed on `branch` (TWO, `firstHead`), and a
 * bare clone at `<root>/git/Codertocat/Hello-World.git`, where the GitHub forge's webUrl
 * `<root>/git` finds the example payloads' repository.
 */
export function githubPrRepository(root: string, branch: string): { work: string; baseSha: string; firstHead: string; bare: string } {
  const work = join(root, 'work');
  mkdirSync(join(work, 'src'), { recursive: true });
  writeFileSync(join(work, 'src/a.ts'), 'one\ntwo\nthree\n');
  git(root, 'init', '-q', '-b', 'master', work);
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  const baseSha = git(work, 'rev-parse', 'HEAD');
  git(work, 'checkout', '-q', '-b', branch);
  writeFileSync(join(work, 'src/a.ts'), 'one\nTWO\nthree\n');
  git(work, 'commit', '-q', '-am', 'Make two loud');
  const firstHead = git(work, 'rev-parse', 'HEAD');
  const bare = join(root, 'git', 'Codertocat', 'Hello-World.git');
  mkdirSync(join(root, 'git', 'Codertocat'), { recursive: true });
  git(root, 'clone', '-q', '--bare', work, bare);
  return { work, baseSha, firstHead, bare };
}
