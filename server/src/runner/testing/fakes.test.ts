import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitDiff } from '../review-files';
import { MemorySandbox } from './fakes';

/** What `git diff` prints for the same base and changes, in a scratch repository. */
function gitDiff(base: Record<string, string>, changes: Record<string, string | null>): string {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-fake-diff-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'core.autocrlf=false', ...args], { cwd: dir, encoding: 'utf8' });
  const write = (path: string, content: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  };
  try {
    git('init', '-q');
    for (const [path, content] of Object.entries(base)) write(path, content);
    git('add', '-A');
    git('commit', '-q', '--allow-empty', '-m', 'base');
    for (const [path, content] of Object.entries(changes)) {
      if (content === null) unlinkSync(join(dir, path));
      else write(path, content);
    }
    git('add', '-A');
    return git('diff', '--cached', '--no-color', '--no-renames');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function memoryDiff(base: Record<string, string>, changes: Record<string, string | null>): Promise<string> {
  const sandbox = new MemorySandbox('s1', 'a'.repeat(40), base);
  for (const [path, content] of Object.entries(changes)) {
    if (content === null) await sandbox.exec({ cmd: ['rm', path] });
    else await sandbox.writeFile(path, content);
  }
  return sandbox.diff();
}

describe('MemorySandbox.diff', () => {
  it("writes added, deleted, edited and empty files exactly as git diff does", async () => {
    const base = { 'src/a.ts': 'one\ntwo\nthree\n', 'src/c.ts': 'gone\n', 'src/nonl.ts': 'x', 'z.txt': 'last\n' };
    // Written out of path order: git's order is by path.
    const changes = { 'src/b.ts': 'export const b = 1;\n', 'src/a.ts': 'one\nTWO\nthree\n', 'src/c.ts': null, 'src/empty.ts': '', 'src/nonl.ts': 'y', 'a/new.md': 'one\ntwo\n' };
    const diff = await memoryDiff(base, changes);
    expect(diff).toContain('diff --git a/src/b.ts b/src/b.ts\nnew file mode 100644\nindex 0000000..');
    expect(diff).toContain('diff --git a/src/c.ts b/src/c.ts\ndeleted file mode 100644\n');
    expect(diff).toBe(gitDiff(base, changes));
  });

  it('splits into the files it changed, telling added and deleted files from edits', async () => {
    const diff = await memoryDiff({ 'src/a.ts': 'one\n', 'src/c.ts': 'gone\n' }, { 'src/a.ts': 'ONE\n', 'src/b.ts': 'new\n', 'src/c.ts': null });
    expect(splitDiff(diff).map(({ path, change }) => `${change} ${path}`)).toEqual(['modified src/a.ts', 'added src/b.ts', 'deleted src/c.ts']);
    expect(await memoryDiff({ 'src/a.ts': 'one\n' }, {})).toBe('');
  });
});
