import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_REPO_POLICY, parseRepoPolicy } from '../policy/repo-policy';
import { policyOverride, policyOverrideRequest } from '../policy/override';
import { checkPolicy } from '../policy/check';
import { deliverPullRequest, type PushGate } from './deliver';
import { LocalForge } from './local-forge';
import { InMemoryPullRequestStore } from './memory-store';
import { pollOutcome } from './outcome';
import { buildPullRequestBody } from './pr-body';
import { branchName, pushChange } from './push';
import { createSourceRepo, diffOf, git, mixedChange, PAGINATE_FIXED } from './testing/repo';

const DAY_MS = 86_400_000;
const approved: PushGate = { policy: DEFAULT_REPO_POLICY, allowTestEdits: false, decisions: [{ by: 'ada', decision: 'approved' }] };

describe('LocalForge with real git', () => {
  let root: string;
  let forge: LocalForge;
  let store: InMemoryPullRequestStore;
  let source: { path: string; sha: string };

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-forge-'));
    store = new InMemoryPullRequestStore();
    forge = new LocalForge({ dataDir: join(root, 'forge'), store });
    source = createSourceRepo();
    await forge.createRepository('sample', source.path);
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(source.path, { recursive: true, force: true });
  });

  function bare(): string {
    return forge.repositoryPath('sample');
  }

  it('pushes a branch, opens a draft PR, merges it and detects a revert', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const branch = branchName('42', 'Fix paginate() off-by-one!');
    expect(branch).toBe('dockhand/42-fix-paginate-off-by-one');

    const body = buildPullRequestBody({
      ticket: { title: 'paginate drops the last item', id: '42' },
      summary: 'Use `start + size` as the slice end.',
      tests: { command: 'npm test', passed: 3, failed: 0, log: 'ok 1\nok 2\nok 3\n' },
      usage: { turns: 4, inputTokens: 12_000, outputTokens: 800, costUsd: 0.07 },
    });
    const { pr, push } = await deliverPullRequest({
      forge,
      repo: 'sample',
      cloneDir: join(root, 'clone'),
      baseSha: source.sha,
      diff,
      branch,
      // A ticket title with a zero-width space and a right-to-left override: the PR shows them written out (left in, the gate refused the push as trojan-source).
      title: 'Fix paginate() off-by\u200b-one\u202e',
      body,
      requester: { name: 'Ada Dev', email: 'ada@example.invalid' },
      gate: approved,
    });
    expect(pr.title).toMatch(/^Fix paginate\(\) off-by.*U\+200B.*-one.*U\+202E/);
    expect(pr.title).not.toMatch(/[\u200b\u202e]/);

    expect(push.pushed).toBe(true);
    expect(pr).toMatchObject({
      repo: 'sample',
      number: 1,
      url: 'dockhand-local://sample/pulls/1',
      branch,
      base: 'main',
      headSha: push.headSha,
      draft: true,
      state: 'open',
      body,
    });
    // The branch in the bare repo is the bot's commit on the base, with the trailer, holding the fix.
    expect(git(bare(), 'rev-parse', `refs/heads/${branch}`)).toBe(push.headSha);
    expect(git(bare(), 'rev-parse', `${push.headSha}^`)).toBe(source.sha);
    expect(git(bare(), 'log', '-1', '--format=%an <%ae>', push.headSha)).toBe('Dockhand Bot <bot@dockhand.invalid>');
    expect(git(bare(), 'log', '-1', '--format=%B', push.headSha)).toContain('Co-authored-by: Ada Dev <ada@example.invalid>');
    expect(git(bare(), 'show', `${push.headSha}:src/paginate.js`)).toBe(PAGINATE_FIXED.trim());
    expect(git(bare(), 'rev-parse', 'refs/heads/main')).toBe(source.sha); // nothing lands before the merge
    expect(await forge.getOutcome('sample', 1)).toBeUndefined();

    const merged = await forge.merge('sample', 1, { by: 'reviewer' });
    expect(merged.state).toBe('merged');
    const main = git(bare(), 'rev-parse', 'refs/heads/main');
    expect(main).toBe(merged.mergeSha);
    expect(git(bare(), 'rev-parse', `${main}^2`)).toBe(push.headSha);
    expect(git(bare(), 'show', 'main:src/paginate.js')).toBe(PAGINATE_FIXED.trim());
    expect(await forge.getOutcome('sample', 1)).toEqual({ outcome: 'merged', at: merged.mergedAt });
    const mergedPoll = await pollOutcome(forge, pr, undefined);
    expect(mergedPoll).toMatchObject({ final: false, event: { type: 'pr.outcome', data: { outcome: 'merged' } } });
    await expect(forge.merge('sample', 1)).rejects.toThrow(/is merged/);

    // Someone reverts the merge on main.
    const dev = mkdtempSync(join(tmpdir(), 'dockhand-forge-dev-'));
    git(dev, 'clone', '-q', bare(), '.');
    git(dev, 'revert', '--no-edit', '-m', '1', main);
    git(dev, 'push', '-q', 'origin', 'main');
    const revertSha = git(dev, 'rev-parse', 'HEAD');
    rmSync(dev, { recursive: true, force: true });

    const outcome = await forge.getOutcome('sample', 1);
    expect(outcome).toMatchObject({ outcome: 'reverted', revertSha });
    const poll = await pollOutcome(forge, pr, 'merged');
    expect(poll.final).toBe(true);
    expect(poll.event).toEqual({ type: 'pr.outcome', data: { outcome: 'reverted', at: outcome?.at } });
    expect((await pollOutcome(forge, pr, 'reverted')).event).toBeUndefined();
  });

  it('does not count a revert outside the 14-day window', async () => {
    const longAgo = new Date(Date.now() - 30 * DAY_MS);
    const oldForge = new LocalForge({ dataDir: join(root, 'forge'), store, now: () => longAgo });
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const branch = branchName('7', 'old fix');
    await deliverPullRequest({ forge: oldForge, repo: 'sample', cloneDir: join(root, 'clone'), baseSha: source.sha, diff, branch, title: 'old fix', body: 'b', gate: approved });
    const merged = await oldForge.merge('sample', 1);
    const dev = mkdtempSync(join(tmpdir(), 'dockhand-forge-dev-'));
    git(dev, 'clone', '-q', bare(), '.');
    git(dev, 'revert', '--no-edit', '-m', '1', merged.mergeSha!);
    git(dev, 'push', '-q', 'origin', 'main');
    rmSync(dev, { recursive: true, force: true });
    expect(await oldForge.getOutcome('sample', 1)).toEqual({ outcome: 'merged', at: longAgo.toISOString() });
  });

  it('pushes exactly once: a retried push or delivery sends nothing and opens no second PR', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const branch = branchName('43', 'fix');
    const input = { cloneDir: join(root, 'clone'), remoteUrl: bare(), baseSha: source.sha, diff, branch, message: 'fix' };

    const first = await pushChange(input);
    expect(first).toMatchObject({ pushed: true, replaced: false });
    // A crash after the push: the retry builds a new commit (different time) but sees the same change remotely.
    const retry = await pushChange({ ...input, cloneDir: join(root, 'fresh-clone') });
    expect(retry).toMatchObject({ pushed: false, headSha: first.headSha });
    expect(git(bare(), 'rev-parse', `refs/heads/${branch}`)).toBe(first.headSha);

    const delivery = { forge, repo: 'sample', cloneDir: join(root, 'clone'), baseSha: source.sha, diff, branch, title: 'fix', body: 'body', gate: approved };
    const a = await deliverPullRequest(delivery);
    const b = await deliverPullRequest(delivery);
    expect(a.push.pushed).toBe(false);
    expect(b.pr.number).toBe(a.pr.number);
    expect(await store.list('sample')).toHaveLength(1);

    // A new round of the same task (different diff) replaces the branch and updates the open PR.
    const second = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED, 'CHANGELOG.md': 'fixed paginate\n' });
    const next = await deliverPullRequest({ ...delivery, diff: second });
    expect(next.push).toMatchObject({ pushed: true, replaced: true });
    expect(next.pr.number).toBe(a.pr.number);
    expect(next.pr.headSha).toBe(next.push.headSha);
  });

  it('reproduces the exact tree of a change with binary files, renames, deletions and mode changes', async () => {
    const { diff, tree } = mixedChange(source.path);
    expect(diff).toContain('GIT binary patch');
    expect(diff).toContain('deleted file mode');
    expect(diff).toContain('rename from README.md');
    const result = await pushChange({ cloneDir: join(root, 'clone'), remoteUrl: bare(), baseSha: source.sha, diff, branch: 'dockhand/47-mixed', message: 'mixed' });
    expect(git(bare(), 'rev-parse', `${result.headSha}^{tree}`)).toBe(tree);
    expect(git(bare(), 'ls-tree', result.headSha, 'scripts/run.sh').split(/\s+/)[0]).toBe('100755');
  });

  it('checks the commit git built before pushing it', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const seen: string[] = [];
    await expect(
      pushChange({
        cloneDir: join(root, 'clone'),
        remoteUrl: bare(),
        baseSha: source.sha,
        diff,
        branch: 'dockhand/48-verify',
        message: 'x',
        verifyCommit: (committed) => {
          seen.push(committed);
          throw new Error('verifier says no');
        },
      }),
    ).rejects.toThrow(/verifier says no/);
    expect(seen[0]).toContain('+  return items.slice(start, start + size);');
    expect(git(bare(), 'branch', '--list', 'dockhand/*')).toBe('');
  });

  it('refuses a diff that does not apply and leaves the remote untouched', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    // The context line no longer matches the base: `git apply` must refuse it.
    const broken = diff.replace('start + size - 1', 'start + size - 2');
    await expect(
      pushChange({ cloneDir: join(root, 'clone'), remoteUrl: bare(), baseSha: source.sha, diff: broken, branch: 'dockhand/44-x', message: 'x' }),
    ).rejects.toMatchObject({ code: 'conflict' });
    expect(git(bare(), 'branch', '--list', 'dockhand/*')).toBe('');
  });

  it('closes a PR, and serves issues from issues.json', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    await deliverPullRequest({ forge, repo: 'sample', cloneDir: join(root, 'clone'), baseSha: source.sha, diff, branch: 'dockhand/45-a', title: 'a', body: 'b', gate: approved });
    const closed = await forge.close('sample', 1);
    expect(closed.state).toBe('closed');
    expect(await forge.getOutcome('sample', 1)).toEqual({ outcome: 'closed', at: closed.closedAt });

    expect(await forge.listOpenIssues('sample')).toEqual([]);
    const issue = await forge.createIssue('sample', { title: 'paginate drops an item', body: 'page 2 is short', labels: ['bug'] });
    await forge.createIssue('sample', { title: 'second' });
    expect(issue).toMatchObject({ number: 1, url: 'dockhand-local://sample/issues/1' });
    expect((await forge.listOpenIssues(forge.repositoryPath('sample'))).map((i) => [i.number, i.title, i.labels])).toEqual([
      [1, 'paginate drops an item', ['bug']],
      [2, 'second', []],
    ]);
    await expect(forge.listOpenIssues('missing')).rejects.toMatchObject({ code: 'not_found' });
    await expect(forge.listOpenIssues('../etc')).rejects.toMatchObject({ code: 'bad_request' });
  });

  it("keeps a push's scratch files in the clone and removes those a killed process of this host left there", async () => {
    const cloneDir = join(root, 'clone');
    const input = { cloneDir, remoteUrl: bare(), baseSha: source.sha, diff: diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED }), message: 'fix' };
    await pushChange({ ...input, branch: branchName('44', 'fix') });
    const parent = join(cloneDir, '.git', 'dockhand-scratch');
    expect(readdirSync(parent)).toEqual([]);

    // A process that is gone (a worker killed mid-push), one that still runs, and another host's.
    const gone = spawnSync('true').pid;
    const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
    const left = [`${host}-${gone}-aB3dE1`, `${host}-${process.ppid}-fG5hI7`, `elsewhere-${gone}-jK9lM1`];
    for (const name of left) {
      mkdirSync(join(parent, name));
      writeFileSync(join(parent, name, 'index'), 'x');
    }
    await pushChange({ ...input, branch: branchName('45', 'fix') });
    expect(readdirSync(parent).sort()).toEqual(left.slice(1).sort());
  });

  it('pushes nothing past the gate: violations need an owner override, pushes need the required approvals', async () => {
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED, '.github/workflows/ci.yml': 'on: push\n' });
    const policy = parseRepoPolicy('owners: [olive]\nrequiredApprovals: 2');
    const delivery = { forge, repo: 'sample', cloneDir: join(root, 'clone'), baseSha: source.sha, diff, branch: 'dockhand/46-gate', title: 'gate', body: 'b' };
    const twoApprovals = [
      { by: 'ada', decision: 'approved' as const },
      { by: 'bob', decision: 'approved' as const },
    ];

    await expect(deliverPullRequest({ ...delivery, gate: { policy, allowTestEdits: false, decisions: twoApprovals } })).rejects.toMatchObject({
      code: 'policy_violation',
      message: expect.stringContaining('ci-config'),
    });
    expect(git(bare(), 'branch', '--list', 'dockhand/*')).toBe('');

    const blocked = checkPolicy({ diff, policy, allowTestEdits: false, stage: 'push' });
    const override = [policyOverrideRequest(diff, blocked, policy), policyOverride({ diff, result: blocked, policy, by: 'olive', comment: 'adds the missing trigger' })];
    await expect(
      deliverPullRequest({ ...delivery, gate: { policy, allowTestEdits: false, decisions: twoApprovals.slice(0, 1), overrides: override } }),
    ).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('1 of 2') });
    expect(git(bare(), 'branch', '--list', 'dockhand/*')).toBe('');

    const done = await deliverPullRequest({ ...delivery, gate: { policy, allowTestEdits: false, decisions: twoApprovals, overrides: override } });
    expect(done.policy).toMatchObject({ ok: false, overridden: true, stage: 'push' });
    expect(done.push.pushed).toBe(true);
  });
});
