import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Task, TaskEvent } from '@dockhand/protocol';
import { z } from 'zod';
import { InMemoryPullRequestStore, LocalForge } from '../../server/src/forge';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { SqliteStore } from '../../server/src/store/sqlite';
import { freePort, startDockhandServe } from '../support/local-server';
import type { FixtureRepo } from '../support/fixture-repo';
import { FIXED_FILE } from './fixture';
import type { ServerUnderTest } from './flows';

/*
 * The whole Dockhand server as it ships: `dockhand serve` (the CLI, tsx) with SQLite, the
 * scheduler, the agent loop on the real Anthropic SDK against the replay model server, gVisor
 * sandboxes from dockhand/base, the policy gate and the local forge. The workspace clone gets the
 * forge repository as `origin` and the forge an open issue, as a developer's setup would have.
 */

const ROOT = resolve(import.meta.dirname, '../..');
export const SESSION = 'vscode-e2e';
/** The pause flow's conversation: a slow first step (the pause lands during it), then the fix after the developer's message. */
export const PAUSE_SESSION = 'vscode-pause';
export const PAUSE_MESSAGE = 'Keep the loop, just start it at zero.';

function addCassettes(replay: ReplayServer): void {
  replay.addCassette(SESSION, {
    turns: [
      {
        name: 'fix',
        content: [
          { type: 'text', text: 'average() starts summing at index 1, so the first value is lost. Fixing the loop start.' },
          { type: 'tool_use', name: 'edit_file', input: { path: FIXED_FILE, command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } },
        ],
      },
      { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now sums from the first value.' } }] },
      // After "request changes" the conversation continues here.
      { name: 'after review comments', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'Reviewed the comments; no further change needed.' } }] },
    ],
  });
  replay.addCassette(`${SESSION}-review`, {
    turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct fix of the loop start.' } }] }],
  });
  replay.addCassette(PAUSE_SESSION, {
    turns: [
      {
        name: 'slow look',
        content: [
          { type: 'text', text: 'Timing the test suite before changing anything.' },
          { type: 'tool_use', name: 'run_command', input: { command: 'sleep 8 && echo suite timed', timeout_seconds: 60 } },
        ],
      },
      // Only after the resume, and the developer's message written while paused is in the request.
      {
        name: 'fix after resume',
        expect: { toolResultContains: 'suite timed', userTextContains: PAUSE_MESSAGE },
        content: [
          { type: 'text', text: 'Starting the loop at zero as asked.' },
          { type: 'tool_use', name: 'edit_file', input: { path: FIXED_FILE, command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } },
        ],
      },
      { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now sums from the first value.' } }] },
    ],
  });
  replay.addCassette(`${PAUSE_SESSION}-review`, {
    turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct fix of the loop start.' } }] }],
  });
}

/** The server as a developer's machine would lose it: stopped (SIGTERM) and started again on the same port and data. */
export interface FullServer extends ServerUnderTest {
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startFullServer(fixture: FixtureRepo, options: { session?: string } = {}): Promise<FullServer> {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const replay = await startReplayServer({});
  addCassettes(replay);
  const dataDir = mkdtempSync(join(tmpdir(), 'dockhand-vscode-server-'));
  // The fixture has no lockfile; the snapshot's `npm install` writes one, which the developer's
  // repository would ignore (the snapshot builder insists on a clean tree after install).
  fixture.commit({ '.gitignore': 'node_modules/\ncoverage/\npackage-lock.json\n' }, 'ignore the install lockfile');
  // The team's repository (a bare "upstream" outside the data dir) the workspace is a clone of;
  // the server registers it from there and keeps its own copy in the local forge.
  const upstream = join(mkdtempSync(join(tmpdir(), 'dockhand-vscode-upstream-')), 'buggy-calc.git');
  execFileSync('git', ['clone', '-q', '--bare', fixture.path, upstream]);
  const forge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: new InMemoryPullRequestStore() });
  const forgeRepo = await forge.createRepository('buggy-calc', upstream);
  await forge.createIssue('buggy-calc', { title: 'average() ignores the first value', body: 'average([2, 4]) returns 2 instead of 3.' });
  execFileSync('git', ['remote', 'add', 'origin', upstream], { cwd: fixture.path });
  execFileSync('git', ['fetch', '-q', 'origin'], { cwd: fixture.path });
  execFileSync('git', ['branch', '-q', '--set-upstream-to=origin/main', 'main'], { cwd: fixture.path });
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  await store.createUser('dev', 'user');
  const token = (await store.createToken('dev')).token;
  await store.createUser('admin', 'admin');
  const adminToken = (await store.createToken('admin')).token;
  await store.close();

  const port = await freePort();
  const env = {
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_MODEL_BASE_URL: replay.url,
    DOCKHAND_REPLAY_SESSION: options.session ?? SESSION,
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_LOG_LEVEL: 'warn',
  };
  let serve = await startDockhandServe(port, env);
  let earlier = '';
  const url = serve.url;
  const stop = async () => {
    const { child } = serve;
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
  };
  // Registered as an admin does (dockhand repo add buggy-calc --from <upstream>): tasks name it.
  const registered = await fetch(`${url}/v1/repos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'buggy-calc', source: upstream }),
  });
  if (!registered.ok && registered.status !== 404) throw new Error(`registering buggy-calc: ${registered.status} ${await registered.text()}`);
  const get = async <T>(path: string, schema: z.ZodType<T>): Promise<T> => {
    const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const text = await response.text();
    if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${text}`);
    return schema.parse(JSON.parse(text));
  };
  return {
    url,
    token,
    forgeRepo,
    tasks: async () => (await get('/v1/tasks', z.object({ tasks: z.array(Task) }))).tasks,
    events: async (taskId) => (await get(`/v1/tasks/${taskId}/events?after=0&limit=10000`, z.object({ events: z.array(TaskEvent) }))).events,
    log: () => earlier + serve.output(),
    stop,
    start: async () => {
      earlier += `${serve.output()}\n--- restarted ---\n`;
      serve = await startDockhandServe(port, env);
    },
    close: async () => {
      await stop();
      await replay.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
