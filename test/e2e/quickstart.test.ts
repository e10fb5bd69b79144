import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/*
 * The README's quick start, for real: `node scripts/start.mjs` as a child process (stdin not a
 * TTY, so it approves by itself) on a scratch data dir — host check, server bundle, the sample
 * repository and its issue on the local forge, `dockhand serve` with gVisor sandboxes and the
 * replay model playing examples/sample-repo.cassette.yaml, review, push, PR. Then the branch it
 * pushed is checked out on the host and the sample's own test suite must pass on it (and fail on
 * main, where the bug is). A second run on the same data dir must work too, reusing the snapshot.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const RUN_TIMEOUT_MS = 20 * 60_000;

let scratch: string;
let dataDir: string;

interface StartRun {
  code: number | null;
  output: string;
  ms: number;
}

function runStart(): Promise<StartRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  // The demo cassette, never a real model, whatever the developer's shell has.
  delete env.ANTHROPIC_API_KEY;
  delete env.DOCKHAND_MODEL_API_KEY;
  delete env.DOCKHAND_DATA_DIR;
  const started = Date.now();
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['scripts/start.mjs', '--data-dir', dataDir, '--port', '0'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, output, ms: Date.now() - started });
    });
  });
}

function field(output: string, pattern: RegExp): string {
  const match = pattern.exec(output);
  if (!match?.[1]) throw new Error(`${pattern} not found in the output:\n${output}`);
  return match[1];
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8' }).trim();

/** Runs the sample's suite with the host's node; exit status and output. */
function sampleTests(cwd: string): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync(process.execPath, ['--test'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (error) {
    const failed = error as { stdout?: string };
    return { ok: false, output: failed.stdout ?? '' };
  }
}

function containersOf(taskId: string): string[] {
  return execFileSync('docker', ['ps', '-aq', '--filter', `label=dockhand.task=${taskId}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-quickstart-'));
  dataDir = join(scratch, 'data');
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('npm start (scripts/start.mjs) on a scratch data dir', () => {
  let first: StartRun;

  it('takes the sample issue to a PR whose branch passes the sample test suite', async () => {
    first = await runStart();
    process.stdout.write(`quickstart first run: ${(first.ms / 1000).toFixed(1)}s\n`);
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain('stdin is not a terminal: approving automatically');
    expect(first.output).toMatch(/tests red[^:]*: \d+ passed, 1 failed/);
    expect(first.output).toMatch(/tests green: \d+ passed, 0 failed/);
    expect(first.output).toMatch(/self-review: approved/);
    expect(first.output).toMatch(/Totals .*% of the prompt read from cache.*\$\d+\.\d{4}/);
    expect(first.output).toMatch(/^Token {2}dh_/m);
    const number = field(first.output, /^Pull request {2}#(\d+) {2}dockhand-local:\/\/sample-repo\/pulls\/\d+$/m);
    expect(Number(number)).toBe(1);
    const branch = field(first.output, /^ {2}branch {3}(\S+) @/m);
    const bare = join(dataDir, 'forge', 'sample-repo.git');
    expect(field(first.output, /^ {2}repo {5}(\S+)/m)).toBe(bare);

    // The branch on the local forge: one commit on main, by the bot, and the suite passes on it.
    expect(git(bare, 'rev-list', '--count', `main..${branch}`)).toBe('1');
    expect(git(bare, 'log', '-1', '--format=%an', branch)).toBe('Dockhand Bot');
    const clone = join(scratch, 'clone');
    git(scratch, 'clone', '-q', bare, clone);
    const onMain = sampleTests(clone);
    expect(onMain.ok, 'the sample bug should make its suite fail on main').toBe(false);
    expect(onMain.output).toMatch(/not ok \d+ - Net 30 is due 30 days after the issue date/);
    git(clone, 'checkout', '-q', branch);
    const onBranch = sampleTests(clone);
    expect(onBranch.ok, onBranch.output).toBe(true);
    expect(onBranch.output).toMatch(/# fail 0/);
    expect(git(clone, 'diff', '--name-only', 'main', branch)).toBe('src/invoice.js');

    // The server stopped cleanly and left no sandbox behind.
    expect(first.output).toContain('no sandbox containers left');
    expect(containersOf(field(first.output, /task (t_[\w-]+) submitted/))).toEqual([]);
  }, RUN_TIMEOUT_MS + 60_000);

  it('runs again on the same data dir: a new task, the snapshot reused, its own branch and PR', async () => {
    expect(first?.code).toBe(0);
    const second = await runStart();
    process.stdout.write(`quickstart second run: ${(second.ms / 1000).toFixed(1)}s\n`);
    expect(second.code, second.output).toBe(0);
    expect(second.output).toMatch(/exists: .*sample-repo\.git/);
    expect(second.output).toMatch(/issue #1 is open/);
    expect(second.output).toMatch(/gVisor sandbox ready: snapshot reused/);
    expect(field(second.output, /task (t_[\w-]+) submitted/)).not.toBe(field(first.output, /task (t_[\w-]+) submitted/));
    // Same issue again: a task of its own gets its own branch and PR, never a silent no-op that
    // reports the first task's PR.
    expect(second.output).toMatch(/^Pull request {2}#2 /m);
    expect(field(second.output, /^ {2}branch {3}(\S+) @/m)).not.toBe(field(first.output, /^ {2}branch {3}(\S+) @/m));
    expect(containersOf(field(second.output, /task (t_[\w-]+) submitted/))).toEqual([]);
  }, RUN_TIMEOUT_MS + 60_000);
});
