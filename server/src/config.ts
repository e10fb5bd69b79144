import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatFieldPath } from '@dockhand/protocol';
import { hasOwnPrices, unpricedModelMessage } from './model/pricing';
import { DockhandError } from './errors';

/*
 * Configuration is read and validated once at start-up. Sources, later wins:
 *   defaults < config file (DOCKHAND_CONFIG=path, YAML or JSON, same shape as `Config`) < DOCKHAND_* env.
 * A bad value names the variable (or the file's dotted key) that holds it.
 */

const intFromString = z.coerce.number().int();

/** A size as an admin writes it ("10g", "512MiB", "2048" MiB, "off"/"0" for none) in MiB. */
const mebibytes = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  const text = value.trim().toLowerCase();
  if (text === 'off') return 0;
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/.exec(text);
  if (!match) return value;
  const scale = { '': 1, k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 }[match[2] as '' | 'k' | 'm' | 'g' | 't'];
  return Math.round(Number(match[1]) * scale);
}, z.number({ message: 'must be a size such as 10g, 512m or 2048 (MiB), or off' }).int().min(0));

export const Config = z.object({
  dataDir: z.string().min(1).default('./.dockhand-data'),
  /** Evaluation runs the API shows (`GET /v1/evals`, `/metrics`); default `<dataDir>/evals`. */
  evalRunsDir: z.string().min(1).optional(),
  /**
   * A Postgres database shared by a fleet of servers (`postgres://user:password@host:port/db`);
   * absent: the embedded SQLite file under `dataDir`. Redacted from logs.
   */
  databaseUrl: z
    .string()
    .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'must be a postgres:// (or postgresql://) URL, e.g. postgres://dockhand@db:5432/dockhand')
    .optional(),
  /**
   * What this process does (`dockhand serve --role`): `all` (the default, one process is the
   * fleet), `api` (REST and WebSocket, no scheduler) or `worker` (scheduler and sandboxes, no
   * public API). `api` and `worker` need the shared Postgres store.
   */
  role: z.enum(['all', 'api', 'worker']).default('all'),
  /**
   * The key of repositories' secrets at rest (`DOCKHAND_SECRETS_KEY`: 32 bytes as 64 hex digits or
   * base64). Unset: `<dataDir>/secrets.key`, made 0600 when the first secret is set. A fleet on
   * Postgres sets it on every process. Redacted from logs.
   */
  secretsKey: z.string().min(1).optional(),
  /**
   * The server's signing key (`DOCKHAND_SIGNING_KEY`): the path of an unencrypted OpenSSH Ed25519
   * private key file (0600) that signs pushed commits and attestations. Unset: `<dataDir>/signing-key`,
   * generated on first start (`provenance/signing-key.ts`). A fleet sets it on every process.
   */
  signingKey: z.string().min(1).optional(),
  /**
   * Where people reach this server (`DOCKHAND_PUBLIC_URL`, e.g. https://dockhand.acme.internal):
   * pushed commits link their task's trajectory under it (`Dockhand-Trajectory:`). Unset: no link.
   */
  publicUrl: z.string().url().regex(/^https?:\/\//, 'must be an http(s):// URL').optional(),
  host: z.string().default('127.0.0.1'),
  port: intFromString.min(0).max(65_535).default(8737),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  model: z
    .object({
      apiKey: z.string().optional(),
      baseURL: z.string().url().optional(),
      name: z.string().default('claude-sonnet-4-6'),
      fallback: z.string().optional(),
      /**
       * The model for routine tasks (`--priority routine`: dependency bumps, lint fixes), fleet-wide
       * (`dockhand serve --model-routine`); a repository's `routineModel` in `.dockhand/policy.yml`
       * wins. Absent: routine tasks run on `name`. Must have prices (model/pricing.ts).
       */
      routine: z.string().min(1).optional(),
      /** Replay cassette session, for the offline demo and tests (apiKey becomes `replay:<session>`). */
      replaySession: z.string().optional(),
    })
    .default({ name: 'claude-sonnet-4-6' }),
  sandbox: z
    .object({
      image: z.string().default('dockhand/base:latest'),
      warmPoolSize: intFromString.min(0).max(64).default(0),
      /**
       * Each sandbox's /workspace disk limit in MiB (`DOCKHAND_SANDBOX_DISK`, e.g. 10g; 0 or off:
       * none): a loop-mounted ext4 per sandbox under `<dataDir>/sandbox-disks` (`sandbox/workspace-disk.ts`).
       */
      diskMiB: mebibytes.default(10_240),
      /** Development only: run sandboxes on plain runc. Loudly logged. */
      unsafeRunc: z.coerce.boolean().default(false),
      /** npm registry for dependency installs and toolchains (Node, npm, pnpm, yarn); its host is allowed. */
      registry: z.string().url().optional(),
      /** Extra CA bundle for installs and toolchain downloads (a TLS-intercepting proxy); default the host's. */
      extraCaBundle: z.string().min(1).optional(),
      /**
       * The company's Python package index (`DOCKHAND_PIP_INDEX_URL`): pip's only index in snapshot
       * builds, its host allowed by the egress proxy. Unset: builds use no index (the base image's
       * Debian packages and the repository's own files), and a missing requirement says so.
       */
      pipIndexUrl: z.string().url().optional(),
      /**
       * Hosts (or "*.domain") repositories' `egressHosts` may add to a snapshot build's allowlist,
       * besides the registries (`DOCKHAND_EGRESS_HOSTS`, comma-separated). A repository's ask
       * outside these is not allowed: it narrows the fleet's list, never widens it. Default none.
       */
      egressHosts: z
        .preprocess(
          (value) => (typeof value === 'string' ? value.split(',').map((host) => host.trim()).filter((host) => host !== '') : value),
          z.array(z.string().regex(/^(\*\.)?[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/i, 'must be a host name or "*.domain" (no scheme, port or path)')),
        )
        .default([]),
      /**
       * URL prefixes repositories' own registries (`.dockhand/environment.yml` `registries`) may be
       * under (`DOCKHAND_PRIVATE_REGISTRIES`, comma-separated): the server sends a repository
       * secret's token only there. Default none.
       */
      privateRegistries: z
        .preprocess(
          (value) => (typeof value === 'string' ? value.split(',').map((url) => url.trim()).filter((url) => url !== '') : value),
          z.array(z.string().url('must be a registry URL such as https://npm.acme.internal/')),
        )
        .default([]),
      /**
       * The node's npm/pnpm tarball cache for snapshot builds (`sandbox/dep-cache.ts`): on by
       * default; `maxGiB` bounds what it keeps (least recently used go first).
       */
      depCache: z
        .object({
          enabled: z.boolean().default(true),
          maxGiB: z.coerce.number().positive().max(65_536).default(4),
        })
        .default({ enabled: true, maxGiB: 4 }),
    })
    .default({ image: 'dockhand/base:latest', warmPoolSize: 0, diskMiB: 10_240, unsafeRunc: false, egressHosts: [], privateRegistries: [], depCache: { enabled: true, maxGiB: 4 } }),
  scheduler: z
    .object({
      concurrency: intFromString.min(1).max(256).default(2),
      leaseSeconds: intFromString.min(2).max(3600).default(30),
      pollMs: intFromString.min(10).max(60_000).default(500),
      /** How often open (and recently merged) PRs are checked for merge, close and revert. */
      outcomePollSeconds: intFromString.min(1).max(86_400).default(60),
      /** SIGTERM: how long running tasks may go on to a waiting point before they are handed back. */
      drainSeconds: intFromString.min(0).max(3600).default(30),
      /**
       * Memory a task's sandbox takes (MiB): set, a worker claims only while the host's available
       * memory, less 1 GiB, still fits one more (and never past `concurrency`). Unset: no memory limit.
       */
      taskMemoryMiB: intFromString.min(16).max(1_048_576).optional(),
      /**
       * A fetch or clone from a repository's source (registration, mirrors) is stopped after this
       * long without progress, never for its total time (`git-child.ts`).
       */
      fetchInactivitySeconds: intFromString.min(1).max(86_400).default(120),
    })
    .default({ concurrency: 2, leaseSeconds: 30, pollMs: 500, outcomePollSeconds: 60, drainSeconds: 30, fetchInactivitySeconds: 120 }),
  /**
   * The fleet's model rate budget (`dockhand serve --model-tpm/--model-rpm`): input tokens and
   * requests per sliding minute for the whole fleet, shared through the Postgres store. Set it a
   * little under the provider's limits; a turn that does not fit waits instead of meeting a 429.
   * Unset: no budget.
   */
  modelBudget: z
    .object({
      inputTokensPerMinute: intFromString.min(1).optional(),
      requestsPerMinute: intFromString.min(1).optional(),
    })
    .default({}),
  rateLimit: z
    .object({
      perMinute: intFromString.min(1).default(120),
    })
    .default({ perMinute: 120 }),
  forge: z
    .object({
      kind: z.enum(['local', 'github']).default('local'),
      /** Short-lived push token (GitHub). Never logged: redacted by the logger. */
      pushToken: z.string().optional(),
      /** Secret GitHub signs webhook deliveries with; enables POST /v1/webhooks/github. Redacted. */
      webhookSecret: z.string().min(16, 'use a random secret of at least 16 characters').optional(),
      requiredApprovals: intFromString.min(1).max(10).default(1),
      /** Follow-up rounds per PR after it opens (local forge, `followup/`). */
      followUpRounds: intFromString.min(0).max(20).default(3),
      /** No follow-up round starts once the task's cost (every round) reaches this (USD); unset: none. */
      followUpMaxCostUsd: z.coerce.number().positive().max(10_000).optional(),
      /** The local forge runs the repository's tests as the check `dockhand/tests` on each new PR head (`followup/local-ci.ts`). */
      localCi: z.coerce.boolean().default(false),
      /** GitHub's REST root (GitHub Enterprise: https://HOST/api/v3); default https://api.github.com. */
      githubApiUrl: z.string().url().optional(),
      /** A GitHub App that mints a short-lived token per repository (instead of a static push token). */
      githubAppId: z.string().regex(/^\d+$/, 'must be the App\'s numeric id').optional(),
      /** File holding the App's PEM private key (read at start-up; never logged). */
      githubAppKeyFile: z.string().min(1).optional(),
      /** The App's installation id; looked up per repository when unset. */
      githubInstallationId: intFromString.min(1).optional(),
    })
    .default({ kind: 'local', requiredApprovals: 1, followUpRounds: 3, localCi: false }),
});
export type Config = z.infer<typeof Config>;

/** Env var → dotted key in `Config`. */
export const ENV_KEYS: Record<string, string> = {
  DOCKHAND_DATA_DIR: 'dataDir',
  DOCKHAND_EVAL_RUNS_DIR: 'evalRunsDir',
  DOCKHAND_DATABASE_URL: 'databaseUrl',
  DOCKHAND_ROLE: 'role',
  DOCKHAND_SECRETS_KEY: 'secretsKey',
  DOCKHAND_SIGNING_KEY: 'signingKey',
  DOCKHAND_PUBLIC_URL: 'publicUrl',
  DOCKHAND_HOST: 'host',
  DOCKHAND_PORT: 'port',
  DOCKHAND_LOG_LEVEL: 'logLevel',
  DOCKHAND_MODEL_API_KEY: 'model.apiKey',
  DOCKHAND_MODEL_BASE_URL: 'model.baseURL',
  DOCKHAND_MODEL: 'model.name',
  DOCKHAND_MODEL_FALLBACK: 'model.fallback',
  DOCKHAND_MODEL_ROUTINE: 'model.routine',
  DOCKHAND_REPLAY_SESSION: 'model.replaySession',
  DOCKHAND_SANDBOX_IMAGE: 'sandbox.image',
  DOCKHAND_WARM_POOL_SIZE: 'sandbox.warmPoolSize',
  DOCKHAND_SANDBOX_DISK: 'sandbox.diskMiB',
  DOCKHAND_UNSAFE_RUNC: 'sandbox.unsafeRunc',
  DOCKHAND_NPM_REGISTRY: 'sandbox.registry',
  DOCKHAND_EXTRA_CA_BUNDLE: 'sandbox.extraCaBundle',
  DOCKHAND_PIP_INDEX_URL: 'sandbox.pipIndexUrl',
  DOCKHAND_EGRESS_HOSTS: 'sandbox.egressHosts',
  DOCKHAND_PRIVATE_REGISTRIES: 'sandbox.privateRegistries',
  DOCKHAND_DEP_CACHE: 'sandbox.depCache.enabled',
  DOCKHAND_DEP_CACHE_MAX_GIB: 'sandbox.depCache.maxGiB',
  DOCKHAND_CONCURRENCY: 'scheduler.concurrency',
  DOCKHAND_LEASE_SECONDS: 'scheduler.leaseSeconds',
  DOCKHAND_POLL_MS: 'scheduler.pollMs',
  DOCKHAND_OUTCOME_POLL_SECONDS: 'scheduler.outcomePollSeconds',
  DOCKHAND_DRAIN_SECONDS: 'scheduler.drainSeconds',
  DOCKHAND_TASK_MEMORY_MIB: 'scheduler.taskMemoryMiB',
  DOCKHAND_FETCH_INACTIVITY_SECONDS: 'scheduler.fetchInactivitySeconds',
  DOCKHAND_RATE_LIMIT_PER_MINUTE: 'rateLimit.perMinute',
  DOCKHAND_MODEL_BUDGET_TPM: 'modelBudget.inputTokensPerMinute',
  DOCKHAND_MODEL_BUDGET_RPM: 'modelBudget.requestsPerMinute',
  DOCKHAND_FORGE: 'forge.kind',
  DOCKHAND_PUSH_TOKEN: 'forge.pushToken',
  DOCKHAND_GITHUB_WEBHOOK_SECRET: 'forge.webhookSecret',
  DOCKHAND_REQUIRED_APPROVALS: 'forge.requiredApprovals',
  DOCKHAND_FOLLOWUP_ROUNDS: 'forge.followUpRounds',
  DOCKHAND_FOLLOWUP_MAX_COST_USD: 'forge.followUpMaxCostUsd',
  DOCKHAND_LOCAL_CI: 'forge.localCi',
  DOCKHAND_GITHUB_API_URL: 'forge.githubApiUrl',
  DOCKHAND_GITHUB_APP_ID: 'forge.githubAppId',
  DOCKHAND_GITHUB_APP_KEY_FILE: 'forge.githubAppKeyFile',
  DOCKHAND_GITHUB_INSTALLATION_ID: 'forge.githubInstallationId',
};

type Plain = Record<string, unknown>;

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function setPath(target: Plain, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isPlain(next)) node[part] = {};
    const child = node[part];
    if (isPlain(child)) node = child;
  }
  node[parts[parts.length - 1] ?? dotted] = value;
}

function readConfigFile(path: string): Plain {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new DockhandError('bad_request', `DOCKHAND_CONFIG: cannot read ${path}`, { field: 'DOCKHAND_CONFIG', cause: error });
  }
  const parsed: unknown = parseYaml(text);
  if (parsed === null || parsed === undefined) return {};
  if (!isPlain(parsed)) {
    throw new DockhandError('bad_request', `DOCKHAND_CONFIG: ${path} must hold a mapping`, { field: 'DOCKHAND_CONFIG' });
  }
  return parsed;
}

/**
 * Boolean variables by key, with the words each takes: a flag that is off unless set (1/true,
 * 0/false), a switch that is on unless turned off (also on/off).
 */
const BOOLEAN_KEYS: Record<string, { on: string[]; off: string[]; hint: (name: string) => string }> = {
  'sandbox.unsafeRunc': { on: ['1', 'true'], off: ['0', 'false'], hint: (name) => `set ${name}=1 to turn it on, ${name}=0 (or leave it unset) to keep it off` },
  'forge.localCi': { on: ['1', 'true'], off: ['0', 'false'], hint: (name) => `set ${name}=1 to run the repository's tests as a check on each PR head, ${name}=0 (or leave it unset) to keep it off` },
  'sandbox.depCache.enabled': { on: ['on', '1', 'true'], off: ['off', '0', 'false'], hint: (name) => `set ${name}=off to turn it off, ${name}=on (or leave it unset) to keep it on` },
};

function booleanValue(name: string, key: string, value: string): boolean | string {
  const words = BOOLEAN_KEYS[key];
  if (!words) return value;
  const lower = value.trim().toLowerCase();
  if (words.on.includes(lower)) return true;
  if (words.off.includes(lower)) return false;
  throw new DockhandError('bad_request', `configuration ${name}: "${value}" is not one of ${[...words.on, ...words.off].join(', ')}`, {
    field: name,
    hint: words.hint(name),
  });
}

/** Reads env (+ optional config file) into a validated `Config`; throws naming the bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Plain = {}): Config {
  const raw: Plain = env.DOCKHAND_CONFIG ? readConfigFile(env.DOCKHAND_CONFIG) : {};
  const sourceOf = new Map<string, string>();
  for (const [name, key] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    // "0"/"false" must mean false for boolean flags (z.coerce.boolean would say true), and a value
    // that is neither ("yes") is an error rather than a silent false.
    setPath(raw, key, booleanValue(name, key, value));
    sourceOf.set(key, name);
  }
  for (const [key, value] of Object.entries(overrides)) setPath(raw, key, value);
  // The SDK's own variable is honoured unless a Dockhand setting already names a key or a replay session.
  const model = raw.model;
  const hasModelCredential = typeof model === 'object' && model !== null && ('apiKey' in model || 'replaySession' in model);
  if (!hasModelCredential && (env.ANTHROPIC_API_KEY ?? '') !== '') setPath(raw, 'model.apiKey', env.ANTHROPIC_API_KEY);
  const result = Config.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = issue ? formatFieldPath(issue.path) : '';
    const source = sourceOf.get(key) ?? (env.DOCKHAND_CONFIG ? `${env.DOCKHAND_CONFIG}: ${key}` : key);
    throw new DockhandError('bad_request', `configuration ${source}: ${issue?.message ?? 'invalid'}`, {
      field: source,
      hint: 'fix the variable or config key and start again',
    });
  }
  if (result.data.role !== 'all' && result.data.databaseUrl === undefined) {
    throw new DockhandError('bad_request', `configuration DOCKHAND_ROLE: role ${result.data.role} needs DOCKHAND_DATABASE_URL (a Postgres store shared with the other roles); with SQLite one process (role all) is the whole fleet`, {
      field: sourceOf.get('role') ?? 'role',
      hint: 'set DOCKHAND_DATABASE_URL, or run with role all',
    });
  }
  const routine = result.data.model.routine;
  if (routine !== undefined && !hasOwnPrices(routine)) {
    const source = sourceOf.get('model.routine') ?? 'model.routine';
    throw new DockhandError('bad_request', `configuration ${source}: ${unpricedModelMessage(routine)}`, {
      field: source,
      hint: 'routine tasks are costed per model in /metrics: name a model with known prices, or leave it unset to run them on DOCKHAND_MODEL',
    });
  }
  const budgetKey = (['inputTokensPerMinute', 'requestsPerMinute'] as const).find((key) => result.data.modelBudget[key] !== undefined);
  if (budgetKey && result.data.databaseUrl === undefined) {
    const source = sourceOf.get(`modelBudget.${budgetKey}`) ?? `modelBudget.${budgetKey}`;
    throw new DockhandError('bad_request', `configuration ${source}: the fleet rate budget is kept in the shared Postgres store, and DOCKHAND_DATABASE_URL is not set`, {
      field: source,
      hint: 'set DOCKHAND_DATABASE_URL, or leave the budget unset (one process: the provider\'s own 429s are retried with backoff)',
    });
  }
  return { ...result.data, dataDir: resolve(result.data.dataDir) };
}
