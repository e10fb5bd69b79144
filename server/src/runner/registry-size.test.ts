import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { DockhandError } from '../errors';
import { LocalForge } from '../forge/local-forge';
import { RepoMirror } from '../sandbox/mirror';
import { SqliteStore } from '../store/sqlite';
import { registeredSource, RepoRegistry } from './registry';

/*
 * Registration at any size, on real git: a source reached over ssh:// through a fake `ssh` on
 * PATH (git's GIT_SSH_COMMAND names `ssh`), which runs git-upload-pack here and relays its output
 * as the test says — at full speed, slowly but steadily, or stopping after some bytes. A fetch is
 * stopped only when nothing moves for the inactivity limit, never for taking long; a stopped one
 * leaves no temporary pack and the next registration completes; the default branch comes first
 * (the registration is stored before the other branches are copied); another repository's work
 * goes on while one registration runs.
 */

const ADMIN = { name: 'root', role: 'admin' as const, createdAt: '' };
const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();

let root: string;
let source: string;
let modeFile: string;
const originalPath = process.env.PATH;

/**
 * `BRANCHES` branches over `COMMITS` commits of random (incompressible) data on main, plus a few
 * branches with commits of their own: some MBs of history, as a real repository has.
 */
const COMMITS = 30;
const BRANCHES = 300;
function fixtureRepository(path: string): void {
  git(root, 'init', '-q', '--bare', '-b', 'main', path);
  const parts: Buffer[] = [];
  for (let index = 1; index <= COMMITS; index++) {
    const blob = randomBytes(100_000);
    parts.push(Buffer.from(`blob\nmark :${index * 2}\ndata ${blob.length}\n`), blob, Buffer.from('\n'));
    const message = `commit ${index}\n`;
    parts.push(Buffer.from(`commit refs/heads/main\nmark :${index * 2 + 1}\ncommitter t <t@t> ${1_700_000_000 + index} +0000\ndata ${message.length}\n${message}${index > 1 ? `from :${index * 2 - 1}\n` : ''}M 100644 :${index * 2} data/part-${index % 7}.bin\n\n`));
  }
  for (let branch = 0; branch < BRANCHES; branch++) parts.push(Buffer.from(`reset refs/heads/topic/${branch}\nfrom :${(1 + (branch % COMMITS)) * 2 + 1}\n\n`));
  // Branches with history of their own (fetched in a batch after main).
  for (let own = 0; own < 3; own++) {
    const blob = randomBytes(50_000);
    parts.push(Buffer.from(`blob\nmark :${10_000 + own}\ndata ${blob.length}\n`), blob, Buffer.from('\n'));
    parts.push(Buffer.from(`commit refs/heads/feature/${own}\ncommitter t <t@t> 1700001000 +0000\ndata 4\nown\nfrom :${COMMITS * 2 + 1}\nM 100644 :${10_000 + own} own-${own}.bin\n\n`));
  }
  const imported = spawnSync('git', ['fast-import', '--quiet'], { cwd: path, input: Buffer.concat(parts) });
  if (imported.status !== 0) throw new Error(`fast-import: ${imported.stderr.toString()}`);
}

/**
 * A fake `ssh`: runs the command git asks for (git-upload-pack '<path>') here, and relays its
 * output through a throttle read from `mode` at each start: `pass`, `slow <ms per 16 KiB>` or
 * `stall <bytes>` (then sends nothing more, holding the connection open).
 */
function fakeSsh(bin: string): void {
  mkdirSync(bin, { recursive: true });
  const throttle = join(bin, 'throttle.pl');
  writeFileSync(throttle, `
$| = 1;
open(my $m, '<', '${modeFile}') or die; my ($mode, $arg) = split(' ', scalar(<$m>)); close($m);
my $total = 0;
while (1) {
  my $n = sysread(STDIN, my $buffer, 16384);
  last unless $n;
  syswrite(STDOUT, $buffer);
  $total += $n;
  if ($mode eq 'stall' && $total >= $arg) { sleep 100000; }
  if ($mode eq 'slow') { select(undef, undef, undef, $arg / 1000); }
}
`);
  writeFileSync(join(bin, 'ssh'), `#!/bin/sh\n# the last argument is the command git runs at the other end\nfor last; do :; done\nsh -c "$last" | perl ${throttle}\n`);
  chmodSync(join(bin, 'ssh'), 0o755);
}

const mode = (value: string) => writeFileSync(modeFile, `${value}\n`);

function tmpPacks(repo: string): string[] {
  return readdirSync(join(repo, 'objects', 'pack')).filter((name) => name.startsWith('tmp_'));
}

function setup(options: { timeoutMs?: number; inactivityMs?: number } = {}) {
  const data = temporaryDir('dockhand-register-size-');
  const store = new SqliteStore(':memory:');
  const mirror = new RepoMirror(join(data, 'data'), { sources: registeredSource(store) });
  const localForge = new LocalForge({ dataDir: join(data, 'data/forge'), store: store.pullRequests });
  const registry = new RepoRegistry({ store, mirror, localForge, ...options });
  closers.push(() => {
    mirror.close();
    store.close();
  });
  return { store, mirror, localForge, registry };
}

const closers: Array<() => void> = [];

beforeAll(() => {
  root = temporaryDir('dockhand-register-source-');
  source = join(root, 'big.git');
  modeFile = join(root, 'mode');
  fixtureRepository(source);
  fakeSsh(join(root, 'bin'));
  return () => {
    process.env.PATH = originalPath;
  };
});

afterEach(() => {
  for (const close of closers.splice(0)) close();
  process.env.PATH = originalPath;
});

const viaSsh = () => {
  process.env.PATH = `${join(root, 'bin')}:${originalPath}`;
  return `ssh://fakehost${source}`;
};

describe('registration at any size', { timeout: 180_000 }, () => {
  it('a source that stops sending is stopped for no progress (saying so), leaves no temporary pack, and the next registration continues to the end', async () => {
    const url = viaSsh();
    const { registry, localForge, store } = setup({ inactivityMs: 10_000 });
    mode('stall 200000');
    const started = Date.now();
    const failure = await registry.register({ name: 'big', source: url }, ADMIN).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(DockhandError);
    expect((failure as DockhandError).code).toBe('repository_unavailable');
    expect((failure as DockhandError).message).toMatch(/^copying refs\/heads\/main of ssh:\/\/fakehost.*: no progress for 10 s /);
    expect((failure as DockhandError).message).not.toMatch(/--filter|--depth|missing objects/);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(registry.registrationStatus('big')).toMatchObject({ state: 'failed', stage: 'default-branch', error: { code: 'repository_unavailable' } });
    const forge = localForge.repositoryPath('big');
    expect(tmpPacks(forge)).toEqual([]);
    expect(await store.getRepo('big')).toBeUndefined();

    mode('pass');
    const { registration } = await registry.register({ name: 'big', source: url }, ADMIN);
    expect(registration.defaultBranch).toBe('main');
    expect(git(forge, 'rev-parse', 'refs/heads/main')).toBe(git(source, 'rev-parse', 'refs/heads/main'));
    expect(git(forge, 'for-each-ref', 'refs/heads/').split('\n')).toHaveLength(BRANCHES + 4);
    expect(tmpPacks(forge)).toEqual([]);
    expect(registry.registrationStatus('big')).toMatchObject({ state: 'done', refsDone: BRANCHES + 4, refsTotal: BRANCHES + 4 });
  });

  it('a slow but steady transfer is never stopped for its total time (the short calls keep their limit)', async () => {
    const url = viaSsh();
    // Old rule: every git call, the fetch included, was killed at `timeoutMs` (here 15 s) in total.
    const { registry, localForge } = setup({ timeoutMs: 15_000, inactivityMs: 15_000 });
    mode('slow 150');
    const started = Date.now();
    const { registration } = await registry.register({ name: 'slow', source: url }, ADMIN);
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeGreaterThan(15);
    expect(registration.defaultBranch).toBe('main');
    expect(git(localForge.repositoryPath('slow'), 'rev-parse', 'refs/heads/main')).toBe(git(source, 'rev-parse', 'refs/heads/main'));
  });

  it('copies the default branch first: the registration is stored, and its status says so, before the other branches are in', async () => {
    const { registry, store, localForge } = setup();
    const job = await registry.start({ name: 'order', source }, ADMIN);
    const seen: string[] = [];
    let storedBeforeBranches = false;
    while (job.status.state === 'running') {
      seen.push(job.status.stage);
      if (job.status.stage === 'branches' && (await store.getRepo('order')) && job.status.refsDone < job.status.refsTotal) storedBeforeBranches = true;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await job.finished;
    expect(seen[0]).toBe('default-branch');
    expect(seen).toContain('branches');
    expect(storedBeforeBranches).toBe(true);
    const forge = localForge.repositoryPath('order');
    expect(git(forge, 'rev-parse', 'refs/heads/feature/2')).toBe(git(source, 'rev-parse', 'refs/heads/feature/2'));
    // Again: every ref is already at the source's commit, so nothing is fetched.
    const again = await registry.start({ name: 'order', source }, ADMIN);
    await again.finished;
    expect(again.status).toMatchObject({ state: 'done', refsDone: BRANCHES + 4, refsTotal: BRANCHES + 4 });
    expect(again.status.current).toBeUndefined();
  });

  it("a registration that is still copying does not hold up another repository's submission", async () => {
    const url = viaSsh();
    const { registry, store } = setup({ inactivityMs: 120_000 });
    mode('stall 200000');
    const big = await registry.start({ name: 'big', source: url }, ADMIN);
    // A small repository registered and a task's base commit admitted while the big one is stuck.
    const small = join(temporaryDir('dockhand-register-small-'), 'small');
    mkdirSync(small);
    git(small, 'init', '-q', '-b', 'main');
    writeFileSync(join(small, 'a.txt'), 'a\n');
    git(small, 'add', '-A');
    git(small, 'commit', '-q', '-m', 'a');
    await registry.register({ name: 'small', source: small }, ADMIN);
    const user = await store.createUser('ada', 'user');
    const admitted = await registry.admit(user, { repo: 'small', baseSha: git(small, 'rev-parse', 'HEAD'), contextFiles: [], dirty: false });
    expect(admitted.name).toBe('small');
    expect(big.status.state).toBe('running');
    mode('pass');
  });
});
