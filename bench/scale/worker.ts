/**
 * One worker process of `npm run bench:scale`: `startServer` with role worker on the bench's
 * Postgres, the real runner, agent loop, policy, local forge and Anthropic SDK against the replay
 * server — and a sandbox stand-in whose commands take BENCH_TOOL_MS (the scaled time of a real
 * tool call; it decides how long each task explores, `ExploringSandbox`) and a test runner stand-in that reports green after BENCH_TEST_MS. The model client
 * asks the fleet's rate budget in Postgres before each turn (BENCH_BUDGET_TPM input tokens a
 * minute). Every second it prints `{"budgetWaits":n,"budgetWaitedMs":ms}` for the orchestrator.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '@dockhand/protocol';
import { loadConfig } from '../../server/src/config';
import { BudgetedModelClient } from '../../server/src/model/budgeted-client';
import { modelFromConfig } from '../../server/src/runner/fleet';
import type { SandboxProvider } from '../../server/src/runner/ports';
import type { ExecOptions, ExecResult, Sandbox } from '../../server/src/sandbox/types';
import { startServer } from '../../server/src/server';
import { PostgresStore } from '../../server/src/store/postgres';
import { ExploringSandbox, explorationsFor, exploredIn, greenTests } from './cassette';

const TOOL_MS = Number(process.env.BENCH_TOOL_MS ?? 200);
const TEST_MS = Number(process.env.BENCH_TEST_MS ?? 400);
/** The repository's files at the base commit, as the orchestrator's fixture has them (the push applies the diff there). */
const BASE_FILES: Record<string, string> = Object.fromEntries(
  (process.env.BENCH_FILES ?? 'src/calc.js').split(',').map((path) => [path, readFileSync(join(process.env.BENCH_FIXTURE ?? '.', path), 'utf8')]),
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class ScaledSandbox extends ExploringSandbox {
  override async exec(options: ExecOptions): Promise<ExecResult> {
    // 0.5–1.5 × the mean: real commands vary, and tasks do not move in lockstep.
    await sleep(TOOL_MS * (0.5 + Math.random()));
    return super.exec(options);
  }
}

let sandboxes = 0;
/** Sandboxes that explore as long as their task's id says, carrying on from its log after a kill. */
const standInSandboxes = (store: PostgresStore): SandboxProvider => ({
  async acquire(input: { baseSha: string; taskId: string }) {
    sandboxes += 1;
    const explored = exploredIn(await store.listEvents(input.taskId));
    const sandbox = new ScaledSandbox(`bench-${process.pid}-${sandboxes}`, input.baseSha, BASE_FILES, explorationsFor(input.taskId), explored);
    return { sandbox, source: 'snapshot' as const, startMs: 0 };
  },
  async release(sandbox: Sandbox) {
    await sandbox.destroy();
  },
});

async function main() {
  const config = loadConfig(process.env, { role: 'worker' });
  if (!config.databaseUrl) throw new Error('DOCKHAND_DATABASE_URL is required');
  const budgetStore = await PostgresStore.open({ url: config.databaseUrl, poolSize: 3 });
  const tpm = Number(process.env.BENCH_BUDGET_TPM ?? 0);
  const budget = tpm > 0 ? budgetStore.modelBudget({ inputTokensPerMinute: tpm }) : undefined;
  const waits = { turns: 0, ms: 0 };
  // One client per run, as in production (`modelFromConfig` per task): the loop sets its retry and
  // fallback listeners on the client, so runs must not share one.
  const modelFor = (_task: Task, purpose: 'agent' | 'review') => {
    if (purpose !== 'agent') return undefined;
    const inner = modelFromConfig(config);
    return budget ? new BudgetedModelClient(inner, budget, (wait) => { waits.turns += 1; waits.ms += wait.waitedMs; }) : inner;
  };
  const running = await startServer(config, {
    parts: { sandboxes: standInSandboxes(budgetStore), feedback: greenTests(() => TEST_MS * (0.5 + Math.random())), modelFor, agentConfig: { review: false } },
  });
  const report = setInterval(() => {
    process.stdout.write(`${JSON.stringify({ budgetWaits: waits.turns, budgetWaitedMs: waits.ms })}\n`);
  }, 1000);
  report.unref();
  // BENCH_CPU_PROF (the orchestrator's): exit on SIGUSR2 so `--cpu-prof` writes this process's profile.
  if (process.env.BENCH_CPU_PROF) process.once('SIGUSR2', () => process.exit(0));
  process.once('beforeExit', () => void running.close().then(() => budgetStore.close()));
}

main().catch((error: unknown) => {
  process.stderr.write(`bench worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
