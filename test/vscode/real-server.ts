import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { loadConfig } from '../../server/src/config';
import { LocalForge } from '../../server/src/forge';
import { createFleet, type Fleet } from '../../server/src/runner/fleet';
import type { AgentInput, AgentResult } from '../../server/src/runner/ports';
import { FakeSandboxProvider, ScriptedAgent } from '../../server/src/runner/testing/fakes';
import type { FixtureRepo } from '../support/fixture-repo';
import { temporaryDir } from '../support/temporary-dirs';
import { FIXED_FILE } from './fixture';
import type { ServerUnderTest } from './flows';

/*
 * The real Dockhand server (createFleet: SQLite store, HTTP + WebSocket API, auth, scheduler, task
 * runner, policy gate, local forge and publisher) listening on 127.0.0.1, for the extension's
 * end-to-end test. Two parts are stand-ins until the full stack is wired into one process:
 * an in-memory sandbox holding the fixture's files, and a scripted agent that does what the
 * replay model's agent would (read, edit through the sandbox, test) and emits the same events.
 */

const BUG = 'let index = 1;';
const FIX = 'let index = 0;';
/**
 * The second file of round 1, for accept per file: a note the developer may leave out. A change
 * to a file of the fixture (the stand-in sandbox's diff has no `new file mode` lines for git apply).
 */
export const NOTES_FILE = 'README.md';
const NOTE = '\n`average()` counts every value, the first one too.\n';
/** What round 2 (after a request for changes) changes, and only that. */
export const ROUND_2_LINE = 'let index = 0 /* the first value counts too */;';

export interface RealServer extends ServerUnderTest {
  fleet: Fleet;
}

/** The scripted agent; `stepDelayMs` spaces its events out like a real run's. */
function fixAverage(stepDelayMs: number, restoredFile?: string) {
  return async (original: AgentInput): Promise<AgentResult> => {
    const input: AgentInput = {
      ...original,
      events: {
        append: async (event) => {
          if (stepDelayMs) await new Promise((resolve) => setTimeout(resolve, stepDelayMs));
          return original.events.append(event);
        },
      },
    };
    return runFix(input, restoredFile);
  };
}

/** An edit the agent takes back: two `file.changed` events, and nothing of it in the diff. */
async function changeAndRestore(input: AgentInput, path: string): Promise<void> {
  const original = (await input.sandbox.readFile(path)).toString();
  const changed = `${original}// a note the agent takes back\n`;
  for (const [from, to] of [[original, changed], [changed, original]] as const) {
    await input.sandbox.writeFile(path, to);
    const patch = createTwoFilesPatch(`a/${path}`, `b/${path}`, from, to, undefined, undefined, { context: 3 }).replace(/^=+\n/m, '');
    await input.events.append({ type: 'file.changed', data: { path, change: 'modified', patch } });
  }
}

async function runFix(input: AgentInput, restoredFile?: string): Promise<AgentResult> {
  if (input.priorEvents.some((event) => event.type === 'review.requested_changes')) return runSecondRound(input);
  const turn = (number: number) =>
    input.events.append({
      type: 'model.turn',
      data: {
        turn: number,
        model: 'claude-sonnet-4-5',
        usage: { inputTokens: 3200, outputTokens: 180, cacheReadTokens: 2800, cacheWriteTokens: 0 },
        costUsd: 0.012,
        stopReason: 'tool_use',
        contextTokens: 6000,
        content: [],
      },
    });
  await turn(1);
  await input.events.append({ type: 'assistant.text', data: { turn: 1, text: 'average() starts summing at index 1; reading calc.js.' } });
  await input.events.append({ type: 'tool.called', data: { turn: 1, toolUseId: 'tu_read', name: 'read_file', input: { path: FIXED_FILE } } });
  const before = (await input.sandbox.readFile(FIXED_FILE)).toString();
  await input.events.append({ type: 'tool.finished', data: { toolUseId: 'tu_read', name: 'read_file', isError: false, output: before, truncated: false, durationMs: 9 } });
  await turn(2);
  await input.events.append({ type: 'tool.called', data: { turn: 2, toolUseId: 'tu_edit', name: 'edit_file', input: { path: FIXED_FILE, old_text: BUG, new_text: FIX } } });
  const after = before.replace(BUG, FIX);
  await input.sandbox.writeFile(FIXED_FILE, after);
  await input.events.append({ type: 'tool.finished', data: { toolUseId: 'tu_edit', name: 'edit_file', isError: false, output: 'Replaced 1 occurrence.', truncated: false, durationMs: 4 } });
  const patch = createTwoFilesPatch(`a/${FIXED_FILE}`, `b/${FIXED_FILE}`, before, after, undefined, undefined, { context: 3 });
  await input.events.append({ type: 'file.changed', data: { path: FIXED_FILE, change: 'modified', patch } });
  const readme = (await input.sandbox.readFile(NOTES_FILE)).toString();
  await input.sandbox.writeFile(NOTES_FILE, readme + NOTE);
  const notesPatch = createTwoFilesPatch(`a/${NOTES_FILE}`, `b/${NOTES_FILE}`, readme, readme + NOTE, undefined, undefined, { context: 3 }).replace(/^=+\n/m, '');
  await input.events.append({ type: 'file.changed', data: { path: NOTES_FILE, change: 'modified', patch: notesPatch } });
  if (restoredFile) await changeAndRestore(input, restoredFile);
  await input.events.append({
    type: 'tests.finished',
    data: { command: 'node --test test', scope: 'selected', passed: 9, failed: 0, skipped: 0, ok: true, quarantined: [], output: '# pass 9\n# fail 0', durationMs: 640 },
  });
  return finish(input, 2, 'tu_finish', 'Fix average() so it sums from the first value.');
}

/** The agent's finish call as the real loop logs it: its summary is the round's account in the PR. */
async function finish(input: AgentInput, turn: number, toolUseId: string, summary: string): Promise<AgentResult> {
  await input.events.append({ type: 'tool.called', data: { turn, toolUseId, name: 'finish', input: { summary } } });
  await input.events.append({ type: 'tool.finished', data: { toolUseId, name: 'finish', isError: false, output: 'Verified.', truncated: false, durationMs: 3 } });
  return { outcome: 'finished', summary, diff: await input.sandbox.diff() };
}

/** After "request changes": one more edit of the fixed line, so the round's own diff is that line alone. */
async function runSecondRound(input: AgentInput): Promise<AgentResult> {
  await input.events.append({
    type: 'model.turn',
    data: { turn: 3, model: 'claude-sonnet-4-5', usage: { inputTokens: 3400, outputTokens: 120, cacheReadTokens: 3000, cacheWriteTokens: 0 }, costUsd: 0.01, stopReason: 'tool_use', contextTokens: 6400, content: [] },
  });
  await input.events.append({ type: 'assistant.text', data: { turn: 3, text: 'Saying why the loop starts at 0, as the review asks.' } });
  const before = (await input.sandbox.readFile(FIXED_FILE)).toString();
  const after = before.replace(FIX, ROUND_2_LINE);
  await input.events.append({ type: 'tool.called', data: { turn: 3, toolUseId: 'tu_edit_2', name: 'edit_file', input: { path: FIXED_FILE, old_text: FIX, new_text: ROUND_2_LINE } } });
  await input.sandbox.writeFile(FIXED_FILE, after);
  await input.events.append({ type: 'tool.finished', data: { toolUseId: 'tu_edit_2', name: 'edit_file', isError: false, output: 'Replaced 1 occurrence.', truncated: false, durationMs: 4 } });
  await input.events.append({ type: 'file.changed', data: { path: FIXED_FILE, change: 'modified', patch: createTwoFilesPatch(`a/${FIXED_FILE}`, `b/${FIXED_FILE}`, before, after, undefined, undefined, { context: 3 }) } });
  await input.events.append({
    type: 'tests.finished',
    data: { command: 'node --test test', scope: 'selected', passed: 9, failed: 0, skipped: 0, ok: true, quarantined: [], output: '# pass 9\n# fail 0', durationMs: 610 },
  });
  return finish(input, 3, 'tu_finish_2', 'Fix average() so it sums from the first value; say why.');
}

/** `restoredFile`: a file of the fixture the agent changes and then restores in round 1 (in the events, not in the diff). */
export async function startRealServer(repo: FixtureRepo, options: { stepDelayMs?: number; restoredFile?: string } = {}): Promise<RealServer> {
  const dataDir = temporaryDir('dockhand-server-');
  const config = loadConfig({}, { dataDir, logLevel: 'silent', 'scheduler.pollMs': 50 });
  const files = [FIXED_FILE, NOTES_FILE, ...(options.restoredFile ? [options.restoredFile] : [])];
  const base = Object.fromEntries(files.map((path) => [path, readFileSync(join(repo.path, path), 'utf8')]));
  const fleet = await createFleet(config, { sandboxes: new FakeSandboxProvider(base), agent: new ScriptedAgent(fixAverage(options.stepDelayMs ?? 0, options.restoredFile)) });
  await fleet.store.createUser('dev', 'user');
  const { token } = await fleet.store.createToken('dev');
  // As a developer would have it: the workspace is a clone of the team's repository (a bare
  // "upstream" outside the server's data dir), registered as an admin would (dockhand repo add
  // buggy-calc --from <upstream>), which makes the local forge's copy where PRs and issues live.
  if (!(fleet.forge instanceof LocalForge)) throw new Error('expected the local forge');
  const upstream = join(temporaryDir('dockhand-upstream-'), 'buggy-calc.git');
  execFileSync('git', ['clone', '-q', '--bare', repo.path, upstream]);
  if (!fleet.repos) throw new Error('expected the repository registry');
  await fleet.repos.register({ name: 'buggy-calc', source: upstream }, { name: 'admin', role: 'admin', createdAt: new Date().toISOString() });
  const forgeRepo = fleet.forge.repositoryPath('buggy-calc');
  await fleet.forge.createIssue('buggy-calc', { title: 'average() ignores the first value', body: 'average([2, 4]) returns 2 instead of 3.' });
  execFileSync('git', ['remote', 'add', 'origin', upstream], { cwd: repo.path });
  execFileSync('git', ['fetch', '-q', 'origin'], { cwd: repo.path });
  execFileSync('git', ['branch', '-q', '--set-upstream-to=origin/main', 'main'], { cwd: repo.path });
  await fleet.app.listen({ host: '127.0.0.1', port: 0 });
  fleet.scheduler.start();
  const address = fleet.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    forgeRepo,
    fleet,
    tasks: async () => (await fleet.store.listTasks({ owner: 'dev' })).tasks,
    events: (taskId) => fleet.store.listEvents(taskId),
    log: () => '',
    close: () => fleet.close(),
  };
}
