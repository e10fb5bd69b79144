/**
 * Dockhand's side of the census, as a new user meets it: one real `dockhand serve` from the
 * current source (the CLI bundle, gVisor sandboxes, SQLite, the local forge; a replay model server
 * that no check calls), and per repository `dockhand repo add <owner/name> --from <clone>` then
 * `dockhand repo check <owner/name> --json`. The check runs under the shared heavy lock
 * (/tmp/dockhand-heavy.lock) one repository at a time, so the census never holds it for long.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ReadinessReport } from '@dockhand/protocol';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { runCli, serverBundle, startDockhandServe, type DockhandServe } from '../../test/support/local-server';
import type { DockhandResult } from './summary';

const ROOT = resolve(import.meta.dirname, '../..');
const HEAVY_LOCK = '/tmp/dockhand-heavy.lock';

export interface CensusServer {
  cli(args: string[], options?: { timeoutMs?: number; heavy?: boolean }): Promise<{ code: number; output: string; seconds: number }>;
  close(): Promise<void>;
}

/** `dockhand serve` on `port` (8900–8949 are the census's) with its data in `dataDir`; its log in `dataDir/server.log`. */
export async function startCensusServer(dataDir: string, port: number): Promise<CensusServer> {
  mkdirSync(dataDir, { recursive: true });
  const replay: ReplayServer = await startReplayServer({ port: port + 1 });
  const baseEnv = { DOCKHAND_DATA_DIR: dataDir, NO_COLOR: '1' };
  const created = await runCli(['token', 'create', '--user', 'census', '--role', 'admin', '--label', 'census'], { env: baseEnv, timeoutMs: 240_000 });
  const token = created.output.trim().split('\n').at(-1) ?? '';
  if (created.code !== 0 || !token.startsWith('dh_')) throw new Error(`token create failed (exit ${created.code}):\n${created.output}`);
  let serve: DockhandServe;
  try {
    serve = await startDockhandServe(port, { ...baseEnv, DOCKHAND_MODEL_BASE_URL: replay.url, DOCKHAND_REPLAY_SESSION: 'census', DOCKHAND_MODEL_API_KEY: '', ANTHROPIC_API_KEY: '' });
  } catch (error) {
    await replay.close();
    throw error;
  }
  const log = join(dataDir, 'server.log');
  appendFileSync(log, serve.output());
  serve.child.stdout?.on('data', (chunk: Buffer) => appendFileSync(log, chunk));
  serve.child.stderr?.on('data', (chunk: Buffer) => appendFileSync(log, chunk));
  const clientEnv = { ...process.env, ...baseEnv, DOCKHAND_URL: serve.url, DOCKHAND_TOKEN: token };
  return {
    cli(args, options = {}) {
      const started = Date.now();
      const command = options.heavy ? ['flock', HEAVY_LOCK, process.execPath, serverBundle(), ...args] : [process.execPath, serverBundle(), ...args];
      return new Promise((done, reject) => {
        const child = spawn(command[0] ?? 'flock', command.slice(1), { cwd: ROOT, env: clientEnv, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs ?? 40 * 60_000);
        child.on('error', reject);
        child.on('close', (code) => {
          clearTimeout(timer);
          done({ code: code ?? 1, output, seconds: (Date.now() - started) / 1000 });
        });
      });
    },
    async close() {
      serve.child.kill('SIGTERM');
      await new Promise((done) => {
        const timer = setTimeout(() => {
          serve.child.kill('SIGKILL');
          done(undefined);
        }, 30_000);
        serve.child.once('exit', () => {
          clearTimeout(timer);
          done(undefined);
        });
      });
      await replay.close();
    },
  };
}

/** The last JSON object in the output that is a readiness report. */
function reportIn(output: string): ReadinessReport | undefined {
  const candidates = [output.trim(), output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1)];
  for (const line of output.split('\n').reverse()) if (line.trim().startsWith('{')) candidates.push(line.trim());
  for (const candidate of candidates) {
    try {
      const parsed = ReadinessReport.safeParse(JSON.parse(candidate));
      if (parsed.success) return parsed.data;
    } catch {
      // not JSON: the next candidate
    }
  }
  return undefined;
}

const lastLines = (output: string, count = 4) => output.trim().split('\n').slice(-count).join(' | ').slice(0, 400);

/** Registers `repo` as `name` from `clone` and checks it at `commit`. */
export async function checkRepo(server: CensusServer, name: string, repo: string, commit: string, clone: string): Promise<DockhandResult> {
  const started = Date.now();
  const result: DockhandResult = { kind: 'dockhand', repo, commit, at: new Date().toISOString(), registered: false, ready: false, blockers: [], passed: 0, failed: 0, preExisting: 0, ranNoTest: false, seconds: 0 };
  const added = await server.cli(['repo', 'add', name, '--from', clone], { timeoutMs: 10 * 60_000 });
  result.registered = added.code === 0 || /already (registered|exists)/i.test(added.output);
  if (!result.registered) {
    result.error = `repo add failed (exit ${added.code}): ${lastLines(added.output)}`;
    result.seconds = (Date.now() - started) / 1000;
    return result;
  }
  const checked = await server.cli(['repo', 'check', name, '--sha', commit, '--json'], { heavy: true, timeoutMs: 40 * 60_000 });
  const report = reportIn(checked.output);
  result.seconds = (Date.now() - started) / 1000;
  if (!report) {
    result.error = `no readiness report (exit ${checked.code}): ${lastLines(checked.output)}`;
    return result;
  }
  result.ready = report.ready;
  result.blockers = report.blocking;
  result.passed = report.tests.passed;
  result.failed = report.tests.failed;
  result.preExisting = report.tests.preExistingFailures.length;
  result.testsDetail = report.tests.detail;
  if (report.tests.judgedBy !== undefined) result.judgedBy = report.tests.judgedBy;
  if (report.tests.command !== undefined) result.testCommand = report.tests.command;
  if (report.tests.runner !== undefined) result.runner = report.tests.runner;
  if (report.snapshot?.built && report.snapshot.buildSeconds !== undefined) result.coldBuildS = report.snapshot.buildSeconds;
  if (report.snapshot?.startSeconds !== undefined) result.snapshotStartS = report.snapshot.startSeconds;
  const said = [report.tests.detail, ...report.blocking.map((blocker) => blocker.problem)].join('\n');
  result.ranNoTest = report.install.ok && report.tests.passed + report.tests.failed === 0 && (/ran no test/i.test(said) || !/exit status/i.test(report.tests.detail));
  return result;
}
