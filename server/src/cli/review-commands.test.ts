import { createTwoFilesPatch } from 'diff';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Task } from '@dockhand/protocol';
import { harness, type Harness } from '../api/test-support';
import { DockhandError } from '../errors';
import { splitDiff } from '../runner/review-files';
import { TaskRunner } from '../runner/task-runner';
import type { PublisherPort, PublishResult } from '../runner/ports';
import { FakePolicy, FakeSandboxProvider, ScriptedAgent, editLikeTheAgent, type AgentScript } from '../runner/testing/fakes';
import { ApiClient } from './client';
import { addReviewCommands } from './review-commands';

/*
 * `dockhand approve --reject-file` against the real API (the review route, the runner, the store)
 * over HTTP: the CLI's arguments become the request's `rejectedFiles`, and the server's refusal of a
 * path that is not in the diff comes back in the option's terms.
 */

class RecordingPublisher implements PublisherPort {
  diffs: string[] = [];
  async publish(input: { task: Task; diff: string }): Promise<PublishResult> {
    this.diffs.push(input.diff);
    return { number: 1, url: 'dockhand-local://app/pulls/1', branch: `dockhand/${input.task.id}`, headSha: 'c'.repeat(40) };
  }
}

/** Edits src/a.ts and adds src/b.ts. */
const twoFiles: AgentScript = async (input) => {
  await editLikeTheAgent(input, 'two', 'TWO');
  await input.sandbox.writeFile('src/b.ts', 'export const b = 1;\n');
  await input.events.append({ type: 'file.changed', data: { path: 'src/b.ts', change: 'added', patch: createTwoFilesPatch('/dev/null', 'b/src/b.ts', '', 'export const b = 1;\n') } });
  return { outcome: 'finished', summary: 'done', diff: await input.sandbox.diff() };
};

let h: Harness;
let url: string;
let publisher: RecordingPublisher;
let runner: TaskRunner;
let lines: string[];
/** Requests the CLI sent (method, path, body), as the client saw them. */
let sent: Array<{ method: string; path: string; body: unknown }>;

beforeEach(async () => {
  h = await harness();
  url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  publisher = new RecordingPublisher();
  runner = new TaskRunner({ log: h.events, sandboxes: new FakeSandboxProvider(), agent: new ScriptedAgent(twoFiles), policy: new FakePolicy(), publisher });
  lines = [];
  sent = [];
});
afterEach(async () => { await h.close(); });

async function inReview(): Promise<string> {
  const task = await h.createTask('alice');
  await runner.run(task.id, new AbortController().signal);
  expect((await h.store.getTask(task.id))?.state).toBe('awaiting_review');
  return task.id;
}

/** Runs `dockhand <args>` as alice against the harness's server. */
async function cli(...args: string[]): Promise<void> {
  const token = h.auth('alice').authorization.replace(/^Bearer /, '');
  const program = new Command('dockhand').exitOverride().configureOutput({ writeErr: () => undefined });
  addReviewCommands(program, {
    client: () => {
      const client = new ApiClient(url, token);
      const request = client.request.bind(client);
      client.request = (method, path, schema, body) => (sent.push({ method, path, body }), request(method, path, schema, body));
      return client;
    },
    out: (line) => lines.push(line),
    clientOptions: (command) => command.option('--server <url>').option('--token <token>'),
  });
  for (const command of program.commands) command.exitOverride().configureOutput({ writeErr: () => undefined });
  await program.parseAsync(['node', 'dockhand', ...args]);
}

async function failure(run: Promise<void>): Promise<DockhandError> {
  const error = await run.then(() => undefined, (caught: unknown) => caught);
  if (!(error instanceof DockhandError)) throw new Error(`expected a DockhandError, got ${String(error)}`);
  return error;
}

describe('dockhand approve --reject-file', () => {
  it('sends each rejected path once as rejectedFiles; the push leaves them out', async () => {
    const id = await inReview();
    await cli('approve', id, '--reject-file', 'src/b.ts', '--reject-file', 'src/b.ts', '--comment', 'not b');
    expect(sent).toEqual([{ method: 'POST', path: `/v1/tasks/${id}/review`, body: { action: 'approve', comments: [{ body: 'not b' }], rejectedFiles: ['src/b.ts'] } }]);
    expect(lines).toEqual([`task ${id}: pushing (left out of the push: src/b.ts)`]);
    await runner.run(id, new AbortController().signal);
    expect(splitDiff(publisher.diffs[0] ?? '').map((section) => section.path)).toEqual(['src/a.ts']);
  });

  it('without it, approves every file (no rejectedFiles in the request)', async () => {
    const id = await inReview();
    await cli('approve', id);
    expect(sent[0]?.body).toEqual({ action: 'approve', comments: [] });
    expect(lines).toEqual([`task ${id}: pushing`]);
  });

  it('a path not in the diff: the server refuses (400, rejectedFiles.N) and the CLI names the option and that path', async () => {
    const id = await inReview();
    const error = await failure(cli('approve', id, '--reject-file', 'src/b.ts', '--reject-file', 'src/nope.ts'));
    expect(error.message).toBe('--reject-file src/nope.ts is not a file of the diff under review (src/a.ts, src/b.ts)');
    expect(error).toMatchObject({ code: 'bad_request', field: '--reject-file' });
    expect(error.hint).toContain('as the diff under review lists them');
    expect((await h.store.getTask(id))?.state).toBe('awaiting_review');
    const every = await failure(cli('approve', id, '--reject-file', 'src/a.ts', '--reject-file', 'src/b.ts'));
    expect(every.message).toBe('--reject-file: every file of the diff is rejected, so nothing would be pushed');
  });

  it('is refused before anything is sent for an approval request, and reject has no such option', async () => {
    const id = await inReview();
    const error = await failure(cli('approve', id, 'apr_1', '--reject-file', 'src/b.ts'));
    expect(error.message).toContain('--reject-file: leaves files out of a reviewed diff; an approval request has no files');
    await expect(cli('reject', id, '--reject-file', 'src/b.ts')).rejects.toMatchObject({ code: 'commander.unknownOption' });
    expect(sent).toEqual([]);
  });
});
