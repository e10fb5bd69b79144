import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Task } from '@dockhand/protocol';
import { LocalForge } from '../forge';
import { buildPullRequestBody } from '../forge/pr-body';
import { ALLOW_TEST_EDITS_LABEL, testEditsLabel } from '../policy/test-edits';
import { forgeTickets } from '../runner/wiring';
import type { TicketSource } from './deps';
import { harness, type Harness } from './test-support';

/*
 * The issue's label decides test edits: the server reads the labels of the issue a task is for
 * from the forge (the real local forge here) when the task is submitted.
 */

let h: Harness;
let forge: LocalForge;
let forgeDir: string;
let failForge = false;

beforeEach(async () => {
  forgeDir = mkdtempSync(join(tmpdir(), 'dockhand-label-forge-'));
  failForge = false;
  const tickets: TicketSource = {
    listOpenIssues: (repo) => (failForge ? Promise.reject(new Error('forge down')) : forgeTickets(forge).listOpenIssues(repo)),
  };
  h = await harness({ deps: { tickets } });
  forge = new LocalForge({ dataDir: forgeDir, store: h.store.pullRequests });
  await forge.createRepository('app', h.repo.path);
});
afterEach(async () => {
  await h.close();
  rmSync(forgeDir, { recursive: true, force: true });
});

async function submitFor(issue: string, extra: Record<string, unknown> = {}): Promise<Task> {
  const res = await h.app.inject({
    method: 'POST', url: '/v1/tasks', headers: h.auth('alice'),
    payload: h.submitBody({ ticket: { kind: 'issue', id: issue, title: 'Update the snapshot test' }, ...extra }),
  });
  expect(res.statusCode, res.body).toBe(202);
  const { id } = JSON.parse(res.body) as { id: string };
  return Task.parse(JSON.parse((await h.app.inject({ url: `/v1/tasks/${id}`, headers: h.auth('alice') })).body));
}

describe('the dockhand:allow-test-edits label on the issue', () => {
  it('sets allowTestEdits and records the label on the task; GET /v1/tickets shows the labels', async () => {
    const labelled = await forge.createIssue('app', { title: 'Update the snapshot test', labels: ['bug', 'Dockhand:Allow-Test-Edits'] });
    const task = await submitFor(String(labelled.number));
    expect(task).toMatchObject({ allowTestEdits: true, allowTestEditsLabel: 'Dockhand:Allow-Test-Edits' });
    const tickets = JSON.parse((await h.app.inject({ url: '/v1/tickets?repo=app', headers: h.auth('alice') })).body) as { tickets: Array<{ labels: string[] }> };
    expect(tickets.tickets[0]?.labels).toEqual(['bug', 'Dockhand:Allow-Test-Edits']);
  });

  it('without the label nothing changes, and a label a client sends itself is dropped', async () => {
    const plain = await forge.createIssue('app', { title: 'Fix paginate', labels: ['bug'] });
    const task = await submitFor(String(plain.number), { allowTestEditsLabel: ALLOW_TEST_EDITS_LABEL });
    expect(task.allowTestEdits).toBe(false);
    expect(task.allowTestEditsLabel).toBeUndefined();
    // The CLI flag / extension checkbox still decide on their own.
    const flagged = await submitFor(String(plain.number), { allowTestEdits: true });
    expect(flagged.allowTestEdits).toBe(true);
    expect(flagged.allowTestEditsLabel).toBeUndefined();
  });

  it('a forge that does not answer does not fail the submission (no label, allowTestEdits as sent)', async () => {
    failForge = true;
    const task = await submitFor('4');
    expect(task.allowTestEdits).toBe(false);
  });

  it('the PR body says the requester allowed test edits with the label', () => {
    const body = buildPullRequestBody({
      ticket: { title: 'Update the snapshot test', id: '4' }, summary: 'Updated it.', taskId: 't_1', requester: 'alice',
      allowTestEdits: true, allowTestEditsLabel: ALLOW_TEST_EDITS_LABEL,
      usage: { turns: 1, inputTokens: 1, outputTokens: 1, costUsd: 0 },
    });
    expect(body).toContain('**Test edits:** allowed by the requester (alice) with the issue label `dockhand:allow-test-edits`');
  });

  it('matches the label case-insensitively and nothing else', () => {
    expect(testEditsLabel(['dockhand:allow-test-edits'])).toBe('dockhand:allow-test-edits');
    expect(testEditsLabel(['allow-test-edits', 'dockhand:allow-test-edits-please'])).toBeUndefined();
  });
});
