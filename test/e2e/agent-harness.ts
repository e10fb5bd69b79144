import { execFileSync } from 'node:child_process';
import Docker from 'dockerode';
import type { CassetteInput } from '../../server/src/model/replay/cassette';
import { AnthropicModelClient } from '../../server/src/model/anthropic-client';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { DockerSandboxDriver } from '../../server/src/sandbox/docker-driver';
import { checkoutFromBundle } from '../../server/src/sandbox/workspace';
import type { Sandbox } from '../../server/src/sandbox/types';
import { runAgent, type AgentOutcome, type RunAgentOptions } from '../../server/src/agent';
import { SimpleFeedbackEngine } from '../../server/src/agent/simple-feedback';
import { RecordingApprover } from '../../server/src/agent/testing/context';
import { MemoryEventSink } from '../../server/src/agent/testing/memory-sink';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';

/*
 * End-to-end harness for the agent loop: the real loop, the real Anthropic SDK (through
 * AnthropicModelClient) against the replay model server, and a real gVisor sandbox from
 * DockerSandboxDriver on the base image with a fixture repository checked out at its base SHA.
 */

export type StepInput = CassetteInput['turns'][number];
type TurnInput = Extract<StepInput, { content: unknown }>;

export const BASE_IMAGE = 'dockhand/base:latest';
export const PRIMARY_MODEL = 'claude-sonnet-4-6';
export const FALLBACK_MODEL = 'claude-haiku-4-5';

/** The reviewer approves; the expectation proves the review call forced submit_review. */
export const APPROVE_REVIEW: TurnInput = {
  expect: { toolChoice: { type: 'tool', name: 'submit_review' } },
  content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Correct, minimal fix.' } }],
};

let sessionCounter = 0;

export interface AgentWorld {
  replay: ReplayServer;
  driver: DockerSandboxDriver;
  close(): Promise<void>;
}

export async function startWorld(): Promise<AgentWorld> {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const replay = await startReplayServer({});
  const driver = new DockerSandboxDriver({ docker: new Docker(), ownerId: `agent-e2e-${process.pid}`, runtime: 'runsc' });
  return {
    replay,
    driver,
    async close() {
      await driver.destroyAll();
      await replay.close();
    },
  };
}

/** A bundle with the fixture's commit under refs/dockhand/*, the shape the sandbox layer fetches from. */
export function gitBundle(repo: FixtureRepo): Buffer {
  execFileSync('git', ['-C', repo.path, 'update-ref', 'refs/dockhand/base', repo.sha]);
  return execFileSync('git', ['-C', repo.path, 'bundle', 'create', '-', 'refs/dockhand/base'], {
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

/**
 * A gVisor sandbox on the plain base image with the fixture checked out at its SHA. The base
 * image's /workspace is empty (snapshots hold a checkout); an empty repository is initialised
 * first and the sandbox layer's own bundle checkout does the rest.
 */
export async function fixtureSandbox(world: AgentWorld, repo: FixtureRepo): Promise<Sandbox> {
  const sandbox = await world.driver.start({ image: BASE_IMAGE, baseSha: repo.sha, labels: { 'dockhand.task': 'agent-e2e' } });
  const init = await sandbox.raw(['git', 'init', '-q', '/workspace']);
  if (init.exitCode !== 0) throw new Error(`git init in the sandbox failed: ${init.stderr.toString('utf8')}`);
  await checkoutFromBundle(sandbox, repo.sha, gitBundle(repo));
  return sandbox;
}

export interface RunOnFixture {
  outcome: AgentOutcome;
  events: MemoryEventSink;
  approver: RecordingApprover;
  sandbox: Sandbox;
  session: string;
}

/** Plays `turns` (and `reviewTurns` for the reviewer) against the buggy-calc fixture in a fresh gVisor sandbox. */
export async function runOnFixture(
  world: AgentWorld,
  input: {
    turns: StepInput[];
    reviewTurns?: StepInput[];
    approver?: RecordingApprover;
    task?: Partial<RunAgentOptions['task']>;
    fixture?: string;
  },
): Promise<RunOnFixture> {
  const repo = createFixtureRepo(input.fixture ?? 'buggy-calc');
  const sandbox = await fixtureSandbox(world, repo);
  const events = new MemoryEventSink();
  const approver = input.approver ?? new RecordingApprover('denied');
  const { outcome, session } = await playCassette(world, { ...input, sandbox, events, approver });
  return { outcome, events, approver, sandbox, session };
}

/** One runAgent call on an existing sandbox and event log, with a fresh replay session for `turns`. */
export async function playCassette(
  world: AgentWorld,
  input: {
    turns: StepInput[];
    reviewTurns?: StepInput[];
    sandbox: Sandbox;
    events: MemoryEventSink;
    approver: RecordingApprover;
    task?: Partial<RunAgentOptions['task']>;
    priorEvents?: RunAgentOptions['priorEvents'];
  },
): Promise<{ outcome: AgentOutcome; session: string }> {
  sessionCounter += 1;
  const session = `agent-e2e-${sessionCounter}`;
  world.replay.addCassette(session, { turns: input.turns });
  world.replay.addCassette(`${session}-review`, { turns: input.reviewTurns ?? [APPROVE_REVIEW] });
  const fastRetry = { baseDelayMs: 5, maxDelayMs: 20, jitter: 0, fallbackAfter: 3, maxAttempts: 8 };
  const model = new AnthropicModelClient({
    apiKey: `replay:${session}`,
    baseURL: world.replay.url,
    model: PRIMARY_MODEL,
    fallbackModel: FALLBACK_MODEL,
    retry: fastRetry,
  });
  const reviewModel = new AnthropicModelClient({ apiKey: `replay:${session}-review`, baseURL: world.replay.url, model: PRIMARY_MODEL, retry: fastRetry });
  const outcome = await runAgent({
    task: { ticket: { kind: 'text', title: 'average() returns the wrong value', body: 'average([1, 2, 3]) should be 2.' }, ...input.task },
    sandbox: input.sandbox,
    model,
    reviewModel,
    events: input.events,
    approver: input.approver,
    feedback: new SimpleFeedbackEngine(),
    ...(input.priorEvents ? { priorEvents: input.priorEvents } : {}),
  });
  return { outcome, session };
}

export const FIX_TURN: StepInput = {
  name: 'fix the loop start',
  content: [
    {
      type: 'tool_use',
      name: 'edit_file',
      input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' },
    },
  ],
};

export function finishTurn(summary: string, expect?: TurnInput['expect']): StepInput {
  return {
    name: 'finish',
    ...(expect ? { expect } : {}),
    content: [{ type: 'tool_use', name: 'finish', input: { summary } }],
  };
}
