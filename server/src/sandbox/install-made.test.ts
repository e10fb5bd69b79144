import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readWorkspaceChanges } from '../feedback/snapshot';
import { describeInstallChanges, INSTALL_MADE_FUNCTION, installMadeSet, readInstallChanges, RECORD_INSTALL_MADE_SCRIPT, withoutInstallMade, WORKSPACE_DIFF_SCRIPT } from './install-made';
import { HostSandbox } from './testing/host-sandbox';

/*
 * The record a snapshot build makes of what its install wrote, and the listings that leave those
 * paths out while they hold what the install made, run with git on a host repository (the
 * gVisor evidence, through a real build and a task sandbox's diff: snapshots.int.test.ts).
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Fixture', '-c', 'user.email=fixture@dockhand.invalid', ...args], { cwd, encoding: 'utf8' }).trim();
}

function write(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

function bash(root: string, script: string): string {
  const env = { ...process.env, GIT_AUTHOR_NAME: 'Fixture', GIT_AUTHOR_EMAIL: 'f@dockhand.invalid', GIT_COMMITTER_NAME: 'Fixture', GIT_COMMITTER_EMAIL: 'f@dockhand.invalid' };
  return execFileSync('bash', ['-c', script], { cwd: root, encoding: 'utf8', env });
}

/** Sandbox.diff's script, run on the host. */
function diffScript(root: string, base: string): string {
  return execFileSync('bash', ['-c', WORKSPACE_DIFF_SCRIPT, base], { cwd: root, encoding: 'utf8' });
}

/** A package whose install (tshy-like) rewrites package.json, writes dist/ nobody ignores and removes a tracked file. */
function installedRepository(): { root: string; sha: string; recorded: string } {
  const root = mkdtempSync(join(tmpdir(), 'dockhand-install-made-'));
  dirs.push(root);
  write(root, { '.gitignore': 'node_modules/\n', 'package.json': '{\n  "name": "p"\n}\n', 'src/index.ts': 'export const a = 1;\n', 'legacy.txt': 'old\n', 'a [weird] *name.txt': 'x\n' });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'package');
  const sha = git(root, 'rev-parse', 'HEAD');
  write(root, { 'package.json': '{\n  "name": "p",\n  "exports": { ".": "./dist/index.js" }\n}\n', 'dist/index.js': 'exports.a = 1;\n', 'dist/index.d.ts': 'export declare const a = 1;\n', 'a [weird] *name.txt': 'y\n' });
  unlinkSync(join(root, 'legacy.txt'));
  const recorded = bash(root, RECORD_INSTALL_MADE_SCRIPT);
  return { root, sha, recorded };
}

describe('what the install made', () => {
  it('records each path the install changed with the blob it left, under a ref that keeps the objects', () => {
    const { root, recorded } = installedRepository();
    const changes = readInstallChanges(recorded);
    expect(changes.map((change) => `${change.change} ${change.path}`).sort()).toEqual([
      'added dist/index.d.ts',
      'added dist/index.js',
      'deleted legacy.txt',
      'modified a [weird] *name.txt',
      'modified package.json',
    ]);
    expect(changes.find((change) => change.path === 'package.json')?.blob).toBe(git(root, 'hash-object', 'package.json'));
    expect(git(root, 'rev-parse', 'refs/dockhand-install/made^{tree}')).toMatch(/^[0-9a-f]{40}$/);
    expect(describeInstallChanges(changes)).toBe('a [weird] *name.txt, dist/, legacy.txt (deleted), package.json (5 files)');
    // The workspace itself is left as the install made it, the real index untouched.
    expect(git(root, 'status', '--porcelain')).not.toBe('');
  });

  it('an install that changed nothing records nothing and the listings run no extra step', () => {
    const root = mkdtempSync(join(tmpdir(), 'dockhand-install-made-'));
    dirs.push(root);
    write(root, { 'a.txt': 'a\n' });
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'a');
    expect(bash(root, RECORD_INSTALL_MADE_SCRIPT)).toBe('');
    expect(bash(root, `${INSTALL_MADE_FUNCTION}\ndockhand_install_made`)).toBe('');
  });

  it('leaves the install-made paths out of the changed files and the diff until something else changes them', async () => {
    const { root, sha } = installedRepository();
    const sandbox = new HostSandbox(root, sha);
    const state = (): string => withoutInstallMade(bash(root, 'git status --porcelain -z --untracked-files=all --no-renames'), installMadeSet(bash(root, `${INSTALL_MADE_FUNCTION}\ndockhand_install_made`)));

    expect(await readWorkspaceChanges(sandbox, sha)).toMatchObject({ changed: [], deleted: [] });
    expect(diffScript(root, sha)).toBe('');
    expect(state()).toBe('');

    // The agent edits a file the install rewrote, adds one under dist/ and edits its own source.
    write(root, { 'package.json': '{\n  "name": "p",\n  "exports": { ".": "./dist/index.js" },\n  "type": "module"\n}\n', 'dist/extra.js': 'x\n', 'src/index.ts': 'export const a = 2;\n' });
    const changes = await readWorkspaceChanges(sandbox, sha);
    expect(changes.changed).toEqual(['dist/extra.js', 'package.json', 'src/index.ts']);
    const diff = diffScript(root, sha);
    // package.json shows its whole change against the base: the install's exports and the agent's line.
    expect(diff).toContain('+  "exports": { ".": "./dist/index.js" },');
    expect(diff).toContain('+  "type": "module"');
    expect(diff).not.toMatch(/dist\/index\.js b\/|legacy\.txt|weird/);
    expect(state().split('\n').sort()).toEqual([' M package.json', ' M src/index.ts', '?? dist/extra.js']);

    // A file the install removed, written again with other content, is a change against the base.
    write(root, { 'legacy.txt': 'new\n' });
    expect(diffScript(root, sha)).toContain('+new');
    expect((await readWorkspaceChanges(sandbox, sha)).changed).toContain('legacy.txt');
  });
});
