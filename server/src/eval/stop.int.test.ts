import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { LABELS } from '../sandbox/docker-driver';
import { SqliteStore } from '../store/sqlite';

/*
 * A stopped `dockhand eval run` (the CLI process, the real fleet, Docker + gVisor): SIGTERM while
 * the instance's snapshot is being built (its install sleeps for ten minutes) ends the run within
 * a minute with every container the process started removed, the build's included; the task stays
 * resumable and the interrupted build is not remembered as the repository's failure.
 */

const ROOT = resolve(import.meta.dirname, '../../..');
/** What the install prints before it sleeps. */
const INSTALLING = 'dockhand-eval-stop-installing';
const docker = new Docker();
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (child?.pid) for (const info of await containersOf(child.pid)) await docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined);
});

function containersOf(pid: number): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${LABELS.ownerPid}=${pid}`] } });
}

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs: number): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 500));
  }
}

describe('eval run stopped by SIGTERM', () => {
  it('removes its snapshot-build container and every other container it started, and leaves the task resumable', { timeout: 15 * 60_000 }, async () => {
    const scratch = temporaryDir('dockhand-eval-stop-');
    // A unique install line: its snapshot key is this test's alone.
    const repo = createRepoOfFiles('eval-stop', {
      '.dockhand/environment.yml': `install: echo ${INSTALLING} ${randomBytes(4).toString('hex')} && sleep 600\ntest: node --test test/\n`,
      'package.json': JSON.stringify({ name: 'stop', version: '1.0.0' }),
      'src/add.js': 'exports.add = (a, b) => a - b;\n',
      'test/add.test.js': "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../src/add.js');\ntest('adds', () => assert.equal(add(1, 2), 3));\n",
    }, 'stop');
    const instancesFile = join(scratch, 'instances.jsonl');
    writeFileSync(instancesFile, `${JSON.stringify({
      repo: 'fixture/stop', instance_id: 'stop-1', base_commit: repo.sha, patch: '', test_patch: '', problem_statement: 'add() subtracts',
      FAIL_TO_PASS: '["test/add.test.js > adds"]', PASS_TO_PASS: '[]', dockhand: { repo_path: repo.path },
    })}\n`);
    const runDir = join(scratch, 'run');
    let output = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'server/src/cli/bin.ts', 'eval', 'run', instancesFile, '--run-dir', runDir, '--mode', 'null', '--concurrency', '1'], {
      cwd: ROOT,
      env: { ...process.env, DOCKHAND_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const running = child;
    const pid = running.pid ?? 0;
    const exited = new Promise<number | null>((done) => running.once('exit', (code) => done(code)));

    // Stopped once the install runs (before it, the build's git work ends with the fleet's git anyway).
    const logs = join(runDir, 'data', 'snapshot-logs');
    await until(async () => {
      if (running.exitCode !== null) throw new Error(`eval run ended before its snapshot's install started:\n${output}`);
      const installing = existsSync(logs) && readdirSync(logs).some((name) => name.endsWith('.log') && readFileSync(join(logs, name), 'utf8').includes(`\n${INSTALLING} `));
      return installing || undefined;
    }, "the snapshot build's install", 10 * 60_000);
    const build = (await containersOf(pid)).find((info) => info.Labels[LABELS.pool] === 'snapshot-build' && info.State === 'running');
    expect(build, output).toBeDefined();
    process.stdout.write(`[eval stop] build container ${build?.Names[0] ?? build?.Id} installing; SIGTERM\n`);

    const stopped = Date.now();
    running.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'hung'>((done) => setTimeout(() => done('hung'), 90_000))]);
    const seconds = (Date.now() - stopped) / 1000;
    process.stdout.write(`${JSON.stringify({ metric: 'eval_stop_seconds', value: Number(seconds.toFixed(1)) })}\n`);
    expect(code, output).toBe(143);
    expect(output).toContain('stopped by SIGTERM');
    expect(await containersOf(pid), output).toEqual([]);

    // The build was cut short by the stop, not by the repository: nothing is remembered against its snapshot.
    expect(existsSync(logs) ? readdirSync(logs).filter((name) => name.endsWith('.failed.json')) : []).toEqual([]);
    const store = new SqliteStore(join(runDir, 'data', 'dockhand.db'));
    try {
      const tasks = (await store.listTasks({ limit: 10 })).tasks;
      expect(tasks.map((task) => task.state), output).toEqual([expect.stringMatching(/^(queued|provisioning)$/)]);
    } finally {
      await store.close();
    }
  });
});
