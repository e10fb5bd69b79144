import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../config';
import { LocalForge } from '../forge';
import { createFleet, type Fleet } from '../runner/fleet';
import { FakeSandboxProvider, ScriptedAgent, editLikeTheAgent } from '../runner/testing/fakes';
import { buildCli } from './main';

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

let dir: string;
let fleet: Fleet;
let url: string;
let bare: string;
let sha: string;
let token: string;
let output: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dockhand-cli-'));
  const work = join(dir, 'work');
  mkdirSync(join(work, 'src'), { recursive: true });
  writeFileSync(join(work, 'src/a.ts'), 'one\ntwo\nthree\n');
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  sha = git(work, 'rev-parse', 'HEAD');
  const config = loadConfig({ DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_POLL_MS: '20' });
  fleet = await createFleet(config, {
    sandboxes: new FakeSandboxProvider(),
    agent: new ScriptedAgent(async (input) => {
      await editLikeTheAgent(input, 'two', 'TWO');
      return { outcome: 'finished', summary: 'Made two loud.', diff: await input.sandbox.diff() };
    }),
  });
  bare = await new LocalForge({ dataDir: join(config.dataDir, 'forge'), store: fleet.store.pullRequests }).createRepository('app', work);
  await fleet.store.createUser('alice', 'user');
  token = (await fleet.store.createToken('alice')).token;
  url = await fleet.app.listen({ host: '127.0.0.1', port: 0 });
  fleet.scheduler.start();
  output = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    output.push(chunk.toString());
    return true;
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await fleet.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('dockhand CLI against a running server', () => {
  it('submit streams the trajectory, approves at review and prints the PR link; tasks lists it', async () => {
    await buildCli().parseAsync(['node', 'dockhand', 'submit', '--server', url, '--token', token, '--title', 'Make two loud', '--repo', bare, '--base', sha, '--approve']);
    const text = output.join('');
    expect(text).toMatch(/task t_\S+ submitted/);
    expect(text).toContain('sandbox ready (snapshot, 5 ms)');
    expect(text).toContain('✎ modified src/a.ts');
    expect(text).toContain('awaiting_review');
    expect(text).toContain('PR opened: dockhand-local://app/pulls/1');
    expect(text.trimEnd().split('\n').at(-1)).toBe('PR: dockhand-local://app/pulls/1');
    output.length = 0;
    await buildCli().parseAsync(['node', 'dockhand', 'tasks', '--server', url, '--token', token]);
    expect(output.join('')).toMatch(/t_\S+\s+pr_open\s+\$0\.00\s+Make two loud\s+dockhand-local:\/\/app\/pulls\/1/);
  });

  it('refuses a bad token with the server\'s error', async () => {
    await expect(buildCli().parseAsync(['node', 'dockhand', 'tasks', '--server', url, '--token', 'dh_wrong'])).rejects.toThrow(/unknown or revoked token/);
  });
});
