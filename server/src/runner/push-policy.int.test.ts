import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type NewEvent, type Task } from '@dockhand/protocol';
import { LocalForge } from '../forge/local-forge';
import { InMemoryPullRequestStore } from '../forge/memory-store';
import { diffOf, git, writeFiles } from '../forge/testing/repo';
import { checkPolicy, parseRepoPolicy, policyOverride, policyOverrideId, policyOverrideRequest } from '../policy';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import { applyReview } from './review';
import { TaskRunner } from './task-runner';
import { FakeSandboxProvider, ScriptedAgent } from './testing/fakes';
import { gitBaseFiles, policyPort, publisherPort } from './wiring';

/*
 * The runner's push stage and the forge's push gate decide the same way about owners'
 * overrides: a diff that breaks a rule goes out when a repo owner overrode exactly that diff, and
 * is stopped with the rule and path named when nobody who may override did. Real policy port,
 * real publisher, real git into the local forge's bare repo.
 */

const POLICY = 'owners: [olive]\n';

let root: string;
let work: string;
let bare: string;
let baseSha: string;
let store: SqliteStore;
let log: EventLog;
let runner: TaskRunner;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'dockhand-push-policy-'));
  work = join(root, 'work');
  git(root, 'init', '-q', '-b', 'main', work);
  writeFiles(work, { 'src/a.ts': 'one\ntwo\nthree\n', '.dockhand/policy.yml': POLICY });
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  baseSha = git(work, 'rev-parse', 'HEAD');
  const forge = new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() });
  bare = await forge.createRepository('app', work);

  store = new SqliteStore(':memory:');
  log = new EventLog(store, new EventHub());
  await store.createUser('alice', 'user');
  const baseFiles = gitBaseFiles();
  runner = new TaskRunner({
    log,
    sandboxes: new FakeSandboxProvider(),
    agent: new ScriptedAgent(async () => { throw new Error('the agent does not run at the push stage'); }),
    policy: policyPort(baseFiles),
    publisher: publisherPort({ forge, clonesDir: join(root, 'clones'), baseFiles }),
  });
});

afterEach(async () => {
  await store.close();
  rmSync(root, { recursive: true, force: true });
});

/** A change that also edits CI configuration (rule `ci-config`), awaiting review. */
async function taskEditingCi(): Promise<{ task: Task; diff: string }> {
  const diff = diffOf(work, { 'src/a.ts': 'one\nTWO\nthree\n', '.github/workflows/ci.yml': 'on: push\n' });
  const request = CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'Make two loud' }, context: { repo: bare, baseSha } });
  const { task } = await store.createTask('alice', request);
  await store.setResult(task.id, { diff, summary: 'made two loud, and CI runs on push' });
  await log.append(task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
  const pending = await store.requestApproval(task.id, { kind: 'push', reason: 'review the diff before it is pushed' });
  log.published([pending.event]);
  return { task, diff };
}

async function approveAndRun(task: Task): Promise<Task> {
  const current = await store.getTask(task.id);
  if (!current) throw new Error(`task ${task.id} vanished`);
  await applyReview({ store, events: log, wake: () => undefined }, current, { name: 'alice', role: 'user', createdAt: '' }, { action: 'approve', comments: [] });
  await runner.run(task.id, new AbortController().signal);
  const after = await store.getTask(task.id);
  if (!after) throw new Error(`task ${task.id} vanished`);
  return after;
}

const dockhandBranches = () => git(bare, 'branch', '--list', 'dockhand/*');

describe('push-stage policy with owners\' overrides', () => {
  it('pushes a change blocked by a rule when a repo owner overrode exactly that diff', async () => {
    const { task, diff } = await taskEditingCi();
    const policy = parseRepoPolicy(POLICY);
    const result = checkPolicy({ diff, policy, allowTestEdits: false, stage: 'push' });
    await log.append(task.id, policyOverrideRequest(diff, result, policy));
    await log.append(task.id, policyOverride({ diff, result, policy, by: 'olive', comment: 'the workflow needs the push trigger' }));

    const after = await approveAndRun(task);

    expect(after.state).toBe('pr_open');
    const events = await store.listEvents(task.id);
    // The push-stage check is recorded as it is (the violation stays visible), and the PR opened.
    expect(events.find((e) => e.type === 'policy.checked' && e.data.stage === 'push')).toMatchObject({
      data: { ok: false, violations: [{ rule: 'ci-config', path: '.github/workflows/ci.yml' }] },
    });
    const opened = events.find((e) => e.type === 'pr.opened');
    if (opened?.type !== 'pr.opened') throw new Error('no pr.opened event');
    expect(git(bare, 'show', `${opened.data.branch}:.github/workflows/ci.yml`)).toBe('on: push');
    expect(git(bare, 'show', `${opened.data.branch}:src/a.ts`)).toBe('one\nTWO\nthree');
  });

  it('still blocks it, naming the rule and the path, when nobody who may override did, and asks the owners', async () => {
    const { task, diff } = await taskEditingCi();
    // An "override" resolved by someone who is not an owner under the repo's policy counts for nothing.
    const policy = parseRepoPolicy(POLICY);
    await log.append(task.id, policyOverrideRequest(diff, checkPolicy({ diff, policy, allowTestEdits: false, stage: 'push' }), policy));
    const byNonOwner: NewEvent = {
      type: 'approval.resolved',
      data: { approvalId: policyOverrideId(diff), decision: 'approved', by: 'mallory', comment: 'looks fine to me' },
    };
    await log.append(task.id, byNonOwner);

    const after = await approveAndRun(task);

    // Back in review, with a request to the owners bound to this diff; nothing pushed.
    expect(after.state).toBe('awaiting_review');
    const events = await store.listEvents(task.id);
    expect(events.filter((e) => e.type === 'task.state').at(-1)).toMatchObject({
      data: { reason: "push blocked by policy: ci-config (.github/workflows/ci.yml); waiting for a repo owner's override" },
    });
    const pending = await store.listApprovals(task.id, 'pending');
    expect(pending).toMatchObject([{ kind: 'policy_override', reason: expect.stringContaining('ci-config (.github/workflows/ci.yml); a repo owner (olive) may override') }]);
    expect(events.some((e) => e.type === 'pr.opened')).toBe(false);
    expect(dockhandBranches()).toBe('');
  });
});
