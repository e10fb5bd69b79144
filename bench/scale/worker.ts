/**
 * One worker process of `npm run bench:scale`: `startServer` with role worker on the bench's
 * Postgres, the real runner, agent loop, policy, local forge and Anthropic SDK against the replay
 * server — and a sandbox stand-in whose commands take BENCH_TOOL_MS (the scaled time of a real
 * tool call) and a test runner stand-in that reports green after BENCH_TEST_MS. The model client
 * asks the fleet's rate budget in Postgres before each turn (BENCH_BUDGET_TPM input tokens a
 * minute). Every second it prints `{"budgetWaits":n,"budgetWaitedMs":ms}` for the orchestrator.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '@dockhand/protocol';
import { loadConfig } from '../../server/src/config';
import type { FeedbackEngine, TestReport } from '../../server/src/feedback/types';
import { BudgetedModelClient } from '../../server/src/model/budgeted-client';
import { modelFromConfig } from '../../server/src/runner/fleet';
import type { SandboxProvider } from '../../server/src/runner/ports';
import { MemorySandbox } from '../../server/src/runner/testing/fakes';
import type { ExecOptions, ExecResult, Sandbox } from '../../server/src/sandbox/types';
import { startServer } from '../../server/src/server';
import { PostgresStore } from '../../server/src/store/postgres';

const TOOL_MS = Number(process.env.BENCH_TOOL_MS ?? 200);
const TEST_MS = Number(process.env.BENCH_TEST_MS ?? 400);
/** The repository's files at the base commit, as the orchestrator's fixture has them (the push applies the diff there). */
const BASE_FILES: Record<string, string> = Object.fromEntries(
  (process.env.BENCH_FILES ?? 'src/calc.js').split(',').map((path) => [path, readFileSync(join(process.env.BENCH_FIXTURE ?? '.', path), 'utf8')]),
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class ScaledSandbox extends MemorySandbox {
  override async exec(options: ExecOptions): Promise<ExecResult> {
    await sleep(TOOL_MS);
    return super.exec(options);
  }
}

let sandboxes = 0;
const standInSandboxes: SandboxProvider = {
  async acquire(input: { baseSha: string; taskId: string }) {
    sandboxes += 1;
    return { sandbox: new ScaledSandbox(`bench-${process.pid}-${sandboxes}`, input.baseSha, BASE_FILES), source: 'snapshot' as const, startMs: 0 };
  },
  async release(sandbox: Sandbox) {
    await sandbox.destroy();
  },
};

const greenTests: FeedbackEngine = {
  async runTests(): Promise<TestReport> {
    await sleep(TEST_MS);
    return {
      command: 'npm test', scope: 'full', selectionReason: 'bench stand-in', passed: 3, failed: 0, skipped: 0, ok: true, quarantined: [],
      output: '3 passed', durationMs: TEST_MS, cases: [], runner: 'unknown', wholeCommand: true,
    };
  },
  async diagnostics() {
    return [];
  },
};

async function main() {
  const config = loadConfig(process.env, { role: 'worker' });
  if (!config.databaseUrl) throw new Error('DOCKHAND_DATABASE_URL is required');
  const budgetStore = await PostgresStore.open({ url: config.databaseUrl, poolSize: 3 });
  const tpm = Number(process.env.BENCH_BUDGET_TPM ?? 0);
  const inner = modelFromConfig(config);
  const model = tpm > 0 ? new BudgetedModelClient(inner, budgetStore.modelBudget({ inputTokensPerMinute: tpm })) : undefined;
  const running = await startServer(config, {
    parts: {
      sandboxes: standInSandboxes,
      feedback: greenTests,
      ...(model ? { model } : {}),
      modelFor: (_task: Task, purpose: 'agent' | 'review') => (purpose === 'agent' ? model ?? inner : undefined),
      agentConfig: { review: false },
    },
  });
  const report = setInterval(() => {
    process.stdout.write(`${JSON.stringify({ budgetWaits: model?.waits ?? 0, budgetWaitedMs: model?.waitedMs ?? 0 })}\n`);
  }, 1000);
  report.unref();
  process.once('beforeExit', () => void running.close().then(() => budgetStore.close()));
}

main().catch((error: unknown) => {
  process.stderr.write(`bench worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
