import { freemem } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Task } from '@dockhand/protocol';
import { buildApp } from '../app';
import type { AgentConfigInput } from '../agent';
import type { Config } from '../config';
import { SmartFeedbackEngine } from '../feedback/engine';
import { GraphCache } from '../feedback/graph';
import type { FeedbackEngine } from '../feedback/types';
import { GitHubForge, LocalForge, type Forge } from '../forge';
import { GitHubThreads } from '../forge/github-threads';
import { configuredForge } from './configured-forge';
import { GitHubPoller, githubFeedbackSink } from '../followup/github';
import type { Logger } from '../log';
import { AnthropicModelClient } from '../model/anthropic-client';
import { BudgetedModelClient } from '../model/budgeted-client';
import { DeferredModelClient } from '../model/deferred-client';
import type { ModelClient } from '../model/types';
import type { RepoPolicy } from '../policy/repo-policy';
import { OutcomePoller } from '../scheduler/outcomes';
import { Scheduler } from '../scheduler/scheduler';
import type { DependencyCacheMetrics } from '../sandbox/dep-cache';
import { RepoMirror } from '../sandbox/mirror';
import { EventHub, EventLog } from '../store/hub';
import type { PostgresStore } from '../store/postgres';
import { SqliteStore } from '../store/sqlite';
import type { AgentPort, SandboxProvider } from './ports';
import { ReadinessChecks } from './readiness';
import { registeredSource, RepoRegistry } from './registry';
import { FileCheckpointStore } from './checkpoints';
import { localThreads } from '../followup/stewards';
import { PullRequestFollower } from '../followup/follower';
import { followUpPublisher } from '../followup/publish';
import { LocalCi } from '../followup/local-ci';
import { loadSigningKey, type SigningKey } from '../provenance/signing-key';
import { createPushAttestor } from '../provenance/attestation-push';
import { chainHead } from '../provenance/chain';
import { openSecrets } from '../secrets/open';
import type { RepositorySecrets } from '../secrets/service';
import { TaskRunner } from './task-runner';
import { agentPort, forgeTickets, gitBaseFiles, policyPort, publisherPort, pushDecisions, repoPolicy } from './wiring';

/** Everything one server process runs, composed once from the configuration. */
export interface Fleet {
  app: FastifyInstance;
  store: SqliteStore | PostgresStore;
  hub: EventHub;
  scheduler: Scheduler;
  /** Follows opened PRs to merged / closed / reverted (started by `start`). */
  outcomes: OutcomePoller;
  /** Takes comments and red checks on the local forge's PRs back to their tasks (started with `outcomes`; absent with another forge). */
  follower?: PullRequestFollower;
  /** A GitHub forge's polling fallback for PR comments, reviews and checks (server.ts starts it when no webhook secret is set). */
  githubPoller?: GitHubPoller;
  runner: TaskRunner;
  forge: Forge;
  /** Registered repositories (tests register theirs here, as `POST /v1/repos` does). */
  repos: RepoRegistry;
  /** The server's signing key (commits, attestations), loaded at start-up (`provenance/signing-key.ts`). */
  signingKey: SigningKey;
  /** Stops taking work, aborts running tasks (they stay resumable), closes the API and store. */
  close(): Promise<void>;
}

export interface FleetParts {
  sandboxes: SandboxProvider;
  /** Throws when the sandbox host is not usable (readiness). */
  sandboxCheck?: () => Promise<void>;
  /** The node's dependency cache for `/metrics` (sandbox/dep-cache.ts). */
  dependencyCache?: () => Promise<DependencyCacheMetrics | undefined>;
  agent?: AgentPort;
  model?: ModelClient;
  /** A model per task and purpose, before `model` (the evaluation harness plays one cassette per instance). */
  modelFor?: (task: Task, purpose: 'agent' | 'review') => ModelClient | undefined;
  feedback?: FeedbackEngine;
  forge?: Forge;
  agentConfig?: AgentConfigInput;
  logger?: Logger;
  /** The store, when the caller opened it first (server.ts: the sandbox service needs the mirror). */
  store?: SqliteStore | PostgresStore;
  /** Live events; give the store's own (`openStore`) with Postgres, so other processes' events arrive. */
  hub?: EventHub;
  /** The mirror of registered repositories, shared with the sandbox service. */
  mirror?: RepoMirror;
  /** Timeout of each git call to a repository's source at registration and submission (default 60 s). */
  repoTimeoutMs?: number;
  /** Repositories' secrets, opened (and their key checked) at start-up; made from the store when absent. */
  secrets?: RepositorySecrets;
  /** The server's signing key; loaded from the configuration (DOCKHAND_SIGNING_KEY or the data dir) when absent. */
  signingKey?: SigningKey;
  /** Extra clean-up on close (e.g. draining a warm pool). */
  onClose?: () => Promise<void>;
}

/**
 * A worker's room for more tasks by memory: how many more sandboxes of `taskMemoryMiB` fit in the
 * host's available memory (`os.freemem`: MemAvailable on Linux) with 1 GiB kept back. Running
 * tasks' sandboxes already hold theirs, so this is room besides them.
 */
export function memoryCapacity(taskMemoryMiB: number, available: () => number = freemem): () => number {
  return () => Math.max(0, Math.floor((available() / 1_048_576 - 1024) / taskMemoryMiB));
}

/**
 * The model client from the configuration. With a replay session the API key selects the
 * cassette (`replay:<session>`); the self-review call uses `<session>-review`.
 */
export function modelFromConfig(config: Config, purpose: 'agent' | 'review' = 'agent', name: string = config.model.name): ModelClient {
  const session = config.model.replaySession && (purpose === 'review' ? `${config.model.replaySession}-review` : config.model.replaySession);
  const apiKey = session ? `replay:${session}` : config.model.apiKey;
  if (!apiKey) throw new Error('no model credentials: set DOCKHAND_MODEL_API_KEY (or DOCKHAND_REPLAY_SESSION with DOCKHAND_MODEL_BASE_URL)');
  return new AnthropicModelClient({
    apiKey,
    baseURL: config.model.baseURL,
    model: name,
    fallbackModel: config.model.fallback,
  });
}

/**
 * The model a task runs on (cost routing): a routine task (`priority: routine`) on its repository's
 * `routineModel` (`.dockhand/policy.yml` at the task's base), else the fleet's `model.routine`, else
 * `model.name` like every other task. The task's `model.turn` events record it, and `/metrics`
 * labels the task with it. The policy is read only for routine tasks.
 */
export async function modelForTask(config: Config, task: Pick<Task, 'priority'>, policy: () => Promise<Pick<RepoPolicy, 'routineModel'>>): Promise<string> {
  if (task.priority !== 'routine') return config.model.name;
  return (await policy()).routineModel ?? config.model.routine ?? config.model.name;
}

/** The mirror of registered repositories: a task's `repo` is a registered name, never a path or URL. */
export function registeredMirror(config: Config, store: SqliteStore | PostgresStore): RepoMirror {
  return new RepoMirror(config.dataDir, { sources: registeredSource(store), fetchInactivityMs: config.scheduler.fetchInactivitySeconds * 1000 });
}

export async function createFleet(config: Config, parts: FleetParts): Promise<Fleet> {
  // First: a bad DOCKHAND_SIGNING_KEY stops start-up before anything is opened, naming the setting.
  const signingKey = parts.signingKey ?? loadSigningKey(config.dataDir, config);
  if (config.databaseUrl && signingKey.source === 'data-dir') {
    parts.logger?.warn({ keyId: signingKey.keyId, path: signingKey.privateKeyPath }, 'DOCKHAND_SIGNING_KEY is not set: this process of a Postgres fleet signs with its own data dir\'s key; give every process the same key file, or commits pushed by different workers verify against different keys');
  }
  const store = parts.store ?? new SqliteStore(join(config.dataDir, 'dockhand.db'));
  const mirror = parts.mirror ?? registeredMirror(config, store);
  const hub = parts.hub ?? new EventHub();
  const secrets = parts.secrets ?? (await openSecrets(config, store));
  // Secrets the server holds are masked wherever they would be written (the model may echo them).
  const known = [config.forge.pushToken, config.model.apiKey, config.forge.webhookSecret].filter((secret): secret is string => typeof secret === 'string' && secret !== '');
  // Repositories' secrets too (every stored value, and each one set later): masked in events, diffs and PR text.
  await secrets.maskInto(known);
  const events = new EventLog(store, hub, known);
  const forgeDir = join(config.dataDir, 'forge');
  // The forge DOCKHAND_FORGE names (GitHub, with its credentials checked now), else the local one.
  const namedForge = parts.forge ? undefined : configuredForge(config);
  const localForge = parts.forge || namedForge ? undefined : new LocalForge({ dataDir: forgeDir, store: store.pullRequests });
  const forge: Forge = parts.forge ?? namedForge ?? localForge ?? new LocalForge({ dataDir: forgeDir, store: store.pullRequests });
  // A task names a registered repository: the local forge's repository of that name, or its mirror.
  const repoPath = (repo: string) => (repo.startsWith('/') ? repo : localForge ? localForge.repositoryPath(repo) : mirror.pathFor(repo));
  const registry = new RepoRegistry({ store, mirror, ...(localForge ? { localForge } : {}), ...(parts.repoTimeoutMs ? { timeoutMs: parts.repoTimeoutMs } : {}), inactivityMs: config.scheduler.fetchInactivitySeconds * 1000, ...(parts.logger ? { logger: parts.logger } : {}) });
  // The local forge's PR comments, reviews and checks (issue 26).
  const pullRequestThreads = localForge ? localThreads({ forge: localForge, store, known }) : undefined;
  // A GitHub forge's PR threads: what its webhooks (and polls) deliver, recorded in the same store.
  const githubThreads = forge instanceof GitHubForge ? new GitHubThreads({ forge, store: store.prThreads, known, ...(parts.logger ? { logger: parts.logger } : {}) }) : undefined;
  const followedThreads = pullRequestThreads ?? githubThreads;
  const followForge = localForge ?? (forge instanceof GitHubForge ? forge : undefined);
  const readiness = new ReadinessChecks({
    registry,
    sandboxes: parts.sandboxes,
    feedback: (repo) => parts.feedback ?? new SmartFeedbackEngine({ repo, flakyStore: store.flaky }),
    ...(parts.logger ? { logger: parts.logger } : {}),
  });
  const baseFiles = gitBaseFiles(repoPath);
  const model = parts.model;
  const graphsDir = join(config.dataDir, 'graphs');
  // The fleet's rate budget (`modelBudget`, Postgres only): every configured model client asks it before a turn.
  const { inputTokensPerMinute, requestsPerMinute } = config.modelBudget;
  const limits = { ...(inputTokensPerMinute ? { inputTokensPerMinute } : {}), ...(requestsPerMinute ? { requestsPerMinute } : {}) };
  const rateBudget = Object.keys(limits).length > 0 && 'modelBudget' in store ? store.modelBudget(limits) : undefined;
  // One client per task and purpose; a routine task's model is known once its repository's policy is read.
  const configured = (task: Task, purpose: 'agent' | 'review'): ModelClient =>
    new DeferredModelClient(async () => {
      const client = modelFromConfig(config, purpose, await modelForTask(config, task, () => repoPolicy(baseFiles, task)));
      return rateBudget ? new BudgetedModelClient(client, rateBudget) : client;
    });
  const agent = parts.agent ?? agentPort({
    model: (task) => parts.modelFor?.(task, 'agent') ?? model ?? configured(task, 'agent'),
    ...(model && !parts.modelFor ? {} : { reviewModel: (task: Task) => parts.modelFor?.(task, 'review') ?? model ?? configured(task, 'review') }),
    // Parsed graphs on disk, shared by tasks on the same base SHA (memory stays per task); baselines
    // and the quarantine in the store.
    feedback: (task) =>
      parts.feedback ??
      new SmartFeedbackEngine({ repo: task.context.repo, flakyStore: store.flaky, baselineStore: store.baselines, cache: new GraphCache(graphsDir) }),
    ...(parts.agentConfig ? { config: parts.agentConfig } : {}),
  });
  // Every push is attested with the server's key over the task's log and its chain head (issue #33).
  const attestor = createPushAttestor({ signer: signingKey, append: (taskId, event) => events.append(taskId, event), chainHead: (taskId) => chainHead(store, taskId), known });
  const runner = new TaskRunner({
    log: events,
    sandboxes: parts.sandboxes,
    agent,
    policy: policyPort(baseFiles, known),
    publisher: publisherPort({
      forge,
      clonesDir: join(config.dataDir, 'clones'),
      baseFiles,
      known,
      ...(config.forge.pushToken ? { secrets: [config.forge.pushToken] } : {}),
      signer: signingKey,
      attestor,
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      // A shared store: the worker's lease is confirmed (and extended) right before it pushes.
      ...('confirmLease' in store ? { confirmLease: (taskId: string) => store.confirmLease(taskId, config.scheduler.leaseSeconds * 1000) } : {}),
    }),
    checkpoints: new FileCheckpointStore({ dataDir: config.dataDir }),
    ...(followedThreads && followForge
      ? { followUp: followUpPublisher({ forge: followForge, threads: followedThreads, threadStore: store.prThreads, clonesDir: join(config.dataDir, 'clones'), signer: signingKey, attestor, ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}), ...('confirmLease' in store ? { confirmLease: (taskId: string) => store.confirmLease(taskId, config.scheduler.leaseSeconds * 1000) } : {}), gate: async (task, log) => ({ policy: await repoPolicy(baseFiles, task), allowTestEdits: task.allowTestEdits, decisions: pushDecisions(log), overrides: log, bots: ['dockhand', 'dockhand-policy'] }) }) }
      : {}),
    ...(parts.logger ? { logger: parts.logger } : {}),
  });
  const scheduler = new Scheduler({
    store,
    run: (taskId, signal) => runner.run(taskId, signal),
    concurrency: config.scheduler.concurrency,
    ...(config.scheduler.taskMemoryMiB ? { capacity: memoryCapacity(config.scheduler.taskMemoryMiB) } : {}),
    leaseMs: config.scheduler.leaseSeconds * 1000,
    pollMs: config.scheduler.pollMs,
    ...(parts.logger ? { logger: parts.logger } : {}),
  });
  const leadership = 'leadership' in store ? store.leadership('pr-outcome-poller') : undefined;
  const outcomes = new OutcomePoller({
    log: events,
    forge,
    intervalMs: config.scheduler.outcomePollSeconds * 1000,
    // A fleet: one process polls the forge (an advisory lock), so an outcome is recorded once.
    ...(leadership ? { leader: () => leadership.isLeader() } : {}),
    ...(parts.logger ? { logger: parts.logger } : {}),
  });
  // Comments and red checks on the local forge's PRs go back to their tasks (issue 26); one process follows on a fleet.
  const followLeadership = 'leadership' in store ? store.leadership('pr-follower') : undefined;
  const follower = followedThreads
    ? new PullRequestFollower({
        log: events,
        threads: followedThreads,
        threadStore: store.prThreads,
        checkpoints: new FileCheckpointStore({ dataDir: config.dataDir }),
        flakyStore: store.flaky,
        wake: () => scheduler.wake(),
        // On GitHub a pass reads each followed PR through REST (5,000 requests an hour): deliveries and
        // polls run a pass at once, so the timer only catches what they missed.
        ...(githubThreads ? { intervalMs: 60_000 } : {}),
        ...(config.forge.localCi && pullRequestThreads
          ? { localCi: new LocalCi({ sandboxes: parts.sandboxes, feedback: (repo) => parts.feedback ?? new SmartFeedbackEngine({ repo, flakyStore: store.flaky, baselineStore: store.baselines }), threads: pullRequestThreads, threadStore: store.prThreads, ...(parts.logger ? { logger: parts.logger } : {}) }) }
          : {}),
        limits: { maxRounds: config.forge.followUpRounds, ...(config.forge.followUpMaxCostUsd !== undefined ? { maxCostUsd: config.forge.followUpMaxCostUsd } : {}) },
        ...(followLeadership ? { leader: () => followLeadership.isLeader() } : {}),
        ...(parts.logger ? { logger: parts.logger } : {}),
      })
    : undefined;
  const githubPoller = githubThreads && follower && forge instanceof GitHubForge
    ? new GitHubPoller({ forge, threads: githubThreads, store, follow: () => follower.pollOnce(), ...(followLeadership ? { leader: () => followLeadership.isLeader() } : {}), ...(parts.logger ? { logger: parts.logger } : {}) })
    : undefined;
  const app = await buildApp({
    store,
    repos: registry,
    readiness,
    secrets,
    hub,
    events,
    control: {
      wake: () => scheduler.wake(),
      interrupt: (taskId) => {
        scheduler.interrupt(taskId);
        // A paused task holds its sandbox with no run to release it: cancelling it frees it here.
        if (!scheduler.active.includes(taskId)) void runner.releaseSandbox(taskId);
      },
      liveDiff: (taskId) => runner.liveDiff(taskId),
    },
    baseFiles,
    tickets: forgeTickets(forge),
    ...(parts.sandboxCheck ? { sandboxCheck: parts.sandboxCheck } : {}),
    ...(parts.dependencyCache ? { dependencyCache: parts.dependencyCache } : {}),
    repoPolicy: (task) => repoPolicy(baseFiles, task),
    requiredApprovals: async (task) => {
      const policy = await repoPolicy(baseFiles, task).catch(() => undefined);
      return Math.max(config.forge.requiredApprovals, policy?.requiredApprovals ?? 1);
    },
    limits: { ratePerMinute: config.rateLimit.perMinute },
    evalRunsDir: config.evalRunsDir ?? join(config.dataDir, 'evals'),
    ...(pullRequestThreads ? { pullRequests: { threads: pullRequestThreads, onActivity: () => void follower?.pollOnce().catch(() => undefined) } } : {}),
    ...(config.forge.webhookSecret
      ? {
          webhooks: {
            githubSecret: config.forge.webhookSecret,
            onPullRequest: async () => void (await outcomes.pollOnce()),
            // Comments, reviews and finished checks on a followed GitHub PR reach the follower (issue 26).
            ...(githubThreads && follower ? { onFeedback: githubFeedbackSink({ threads: githubThreads, store, follow: () => follower.pollOnce(), ...(parts.logger ? { logger: parts.logger } : {}) }) } : {}),
          },
        }
      : {}),
    ...(parts.logger ? { logger: parts.logger } : {}),
  });
  let closed = false;
  return {
    app, store, hub, scheduler, outcomes, runner, forge, repos: registry, signingKey, ...(follower ? { follower } : {}), ...(githubPoller ? { githubPoller } : {}),
    async close() {
      if (closed) return;
      closed = true;
      // Hung git children (a source that never answers) die now: nothing below waits on them.
      mirror.close();
      readiness.close();
      outcomes.stop();
      follower?.stop();
      githubPoller?.stop();
      await scheduler.stop();
      await app.close();
      await runner.releaseAll();
      await parts.onClose?.();
      await store.close();
    },
  };
}
