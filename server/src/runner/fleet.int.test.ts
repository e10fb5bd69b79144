import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LocalForge } from '../forge';
import { DOCKHAND_BOT } from '../forge/push';
import { allowedSignersLine } from '../provenance/signing-key';
import { verifyCommit } from '../provenance/verify-commit';
import type { Fleet } from './fleet';
import { composedFleet, git } from './testing/composed-fleet';


let dir: string;
let fleet: Fleet;
let bare: string;
let sha: string;
let token: string;
let forge: LocalForge;

beforeEach(async () => {
  ({ dir, fleet, forge, bare, sha, token } = await composedFleet('dockhand-fleet-'));
});
afterEach(async () => {
  await fleet.close();
  rmSync(dir, { recursive: true, force: true });
});

// Read from the store, not over the API: polling GET /v1/tasks/:id every 20 ms ran into the API's
// 120 requests a minute on a loaded machine (a 429 body is not a Task).
async function waitFor(id: string, state: string) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const task = await fleet.store.getTask(id);
    if (task?.state === state) return task;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`task never reached ${state}`);
}

describe('the composed fleet (real store, API, scheduler, runner, policy, local forge, git push)', () => {
  it('takes a ticket to an open draft PR on the local forge, pushing once', async () => {
    const headers = { authorization: `Bearer ${token}` };
    const created = await fleet.app.inject({
      method: 'POST', url: '/v1/tasks', headers,
      payload: { ticket: { kind: 'issue', id: '7', title: 'Make two loud' }, context: { repo: bare, baseSha: sha } },
    });
    expect(created.statusCode).toBe(202);
    const { id } = JSON.parse(created.body);
    await waitFor(id, 'awaiting_review');
    const diff = JSON.parse((await fleet.app.inject({ url: `/v1/tasks/${id}/diff`, headers })).body);
    expect(diff.files).toEqual([{ path: 'src/a.ts', change: 'modified' }]);
    const file = JSON.parse((await fleet.app.inject({ url: `/v1/tasks/${id}/files?path=src/a.ts`, headers })).body);
    expect(file).toEqual({ path: 'src/a.ts', base: 'one\ntwo\nthree\n', after: 'one\nTWO\nthree\n' });
    await fleet.app.inject({ method: 'POST', url: `/v1/tasks/${id}/review`, headers, payload: { action: 'approve' } });
    const done = await waitFor(id, 'pr_open');
    expect(done.prUrl).toBe('dockhand-local://app/pulls/1');
    const events = await fleet.store.listEvents(id);
    expect(events.filter((e) => e.type === 'pr.opened')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'policy.checked').map((e) => e.type === 'policy.checked' && e.data.stage)).toEqual(['review', 'push']);
    const branch = events.find((e) => e.type === 'pr.opened');
    const branchName = branch?.type === 'pr.opened' ? branch.data.branch : '';
    expect(git(bare, 'show', `${branchName}:src/a.ts`)).toBe('one\nTWO\nthree');
    expect(git(bare, 'log', '-1', '--format=%an%n%B', branchName)).toMatch(/Dockhand Bot[\s\S]*Co-authored-by: alice/);
    // Signed with the fleet's key, with the server's trailers (issue #33): the wiring, not only the forge.
    const checks = await verifyCommit({ repoDir: bare, revision: branchName, allowedSigners: allowedSignersLine(fleet.signingKey, DOCKHAND_BOT.email) });
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(git(bare, 'log', '-1', '--format=%(trailers:key=Dockhand-Task,valueonly)', branchName)).toBe(id);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));

    // The PR is merged on the forge; the outcome poller records it and the metrics see it.
    expect(await fleet.outcomes.pollOnce()).toEqual([]);
    await forge.merge('app', 1);
    expect(await fleet.outcomes.pollOnce()).toEqual([id]);
    expect((await fleet.store.getTask(id))?.state).toBe('merged');
    expect(await fleet.outcomes.pollOnce()).toEqual([]);
    await fleet.store.createUser('root', 'admin');
    const admin = (await fleet.store.createToken('root')).token;
    const metrics = await fleet.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${admin}` } });
    expect(metrics.body).toMatch(/dockhand_merge_rate\{repo="[^"]+",model="none"\} 1/);
    expect(metrics.body).toMatch(/dockhand_prs_opened_total\{[^}]*\} 1/);
  });

  it('tickets come from the forge issues', async () => {
    const res = await fleet.app.inject({ url: `/v1/tickets?repo=app`, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ tickets: [] });
  });
});

