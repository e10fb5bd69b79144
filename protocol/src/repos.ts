import { z } from 'zod';

/*
 * Registered repositories, their environment recipe and their readiness report.
 *
 * A repository is registered before anyone works on it; a task names it by `name`. The server
 * never clones a path or URL a user typed in a task: mirrors are made from the registration.
 *
 * The environment recipe says how a repository's sandbox is built and how its tests run. It is
 * detected from the repository's own files at a commit and can be overridden in
 * `.dockhand/environment.yml`; a snapshot belongs to exactly one (repository, recipe) pair.
 */

export const RepoName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(?:\/[A-Za-z0-9][A-Za-z0-9._-]{0,99})?$/, 'must be a repository name such as "shop" or "acme/shop"');

/** Where a value of the recipe came from (a file name such as ".nvmrc", "environment.yml" or "default"). */
const Source = z.string().min(1).max(200);

export const PackageManagerName = z.enum(['npm', 'pnpm', 'yarn', 'yarn-berry']);
export type PackageManagerName = z.infer<typeof PackageManagerName>;

export const EnvironmentRecipe = z.object({
  /** The registered repository this recipe (and any snapshot built from it) belongs to. */
  repo: z.string().min(1),
  node: z.object({ version: z.string().min(1), source: Source }).optional(),
  packageManager: z.object({ name: PackageManagerName, version: z.string().min(1), source: Source }).optional(),
  python: z.object({ version: z.string().optional(), requirements: z.array(z.string()).default([]), source: Source }).optional(),
  install: z.object({ command: z.string(), source: Source }),
  /** Lifecycle scripts (postinstall, prepare, …) run during the install, under the egress allowlist. */
  lifecycleScripts: z.boolean().default(true),
  /** Packages whose lifecycle scripts are skipped (`.dockhand/environment.yml` `skipScripts`). */
  skipScripts: z.array(z.string()).default([]),
  /** Hosts the install may reach besides the package registries. */
  egressHosts: z.array(z.string()).default([]),
  /**
   * The repository's own npm registries (`.dockhand/environment.yml` `registries`): a scope (absent:
   * the default registry), its URL and the name of the repository secret that authenticates it.
   * The value stays in the server (its registry front adds it upstream); absent when none.
   */
  registries: z.array(z.object({ scope: z.string().optional(), url: z.string(), token: z.string() })).optional(),
  /**
   * The repository's own Python package index (`.dockhand/environment.yml` `pythonIndex`): its
   * simple URL, the HTTP Basic user name (absent: `__token__`) and the name of the secret that is
   * the password. pip reaches it through the server's front, which adds the credential; absent when none.
   */
  pythonIndex: z.object({ url: z.string(), username: z.string().optional(), token: z.string() }).optional(),
  test: z.object({
    command: z.string().min(1),
    source: Source,
    /**
     * The test command as separate steps, in order, when the repository's CI runs it that way
     * (one workflow `run:` step each, with its `working-directory`). Each step runs as written,
     * has its own baseline at the base commit, and a step that fails there is pre-existing while
     * the later steps still run. Absent: `command` is the one step (its `&&` chain is split by
     * the feedback engine). `command` always shows the whole, e.g. the steps joined with ` && `.
     */
    steps: z
      .array(
        z.object({
          /** The CI step's name, or the command itself when it has none. */
          name: z.string().min(1).max(200),
          command: z.string().min(1),
          /** Relative to the repository root; absent = the root. */
          cwd: z.string().min(1).max(500).optional(),
          /** Environment the CI step sets (`env:` of the workflow, job and step), never secrets. */
          env: z.record(z.string(), z.string()).optional(),
        }),
      )
      .max(50)
      .optional(),
  }),
  /** Run once, instead of the full test command, before a PR is opened. */
  prePr: z.object({ command: z.string().min(1), source: Source }).optional(),
  /** `.dockhand/setup.sh`: 'after' runs it after the default install, 'replace' instead of it. */
  setupScript: z.enum(['after', 'replace']).optional(),
  /** Repository secrets `.dockhand/setup.sh` gets as files (`environment.yml` `secrets`), by name only; absent when none. */
  setupSecrets: z.array(z.string()).optional(),
});
export type EnvironmentRecipe = z.infer<typeof EnvironmentRecipe>;

export const RepoRegistration = z.object({
  name: RepoName,
  /** Where the server mirrors it from: a local path on the server host, or an http(s)/ssh URL. */
  source: z.string().min(1).max(4096),
  /** Default branch detected from the source (a PR's base when the task names none). */
  defaultBranch: z.string().min(1).max(255),
  owners: z.array(z.string().min(1).max(200)).default([]),
  /** Users who may submit tasks; empty = every signed-in user. */
  submitters: z.array(z.string().min(1).max(200)).default([]),
  createdAt: z.string(),
  createdBy: z.string(),
  /**
   * What the server mirrors from when it is not `source` itself: the local forge's bare
   * repository `<data>/forge/<name>.git`, made from a local path or URL at registration.
   */
  mirrorSource: z.string().min(1).max(4096).optional(),
});
export type RepoRegistration = z.infer<typeof RepoRegistration>;

const UserName = z.string().regex(/^[A-Za-z0-9_.@-]{1,100}$/, 'must be a user name (1-100 of A-Z a-z 0-9 _ . @ -)');

/** `POST /v1/repos` (admins): register a repository from a path on the server host or a URL. */
export const RegisterRepoRequest = z
  .object({
    name: RepoName,
    /** An absolute path on the server host, `https://…`, `ssh://…` or `git@host:path`. */
    source: z.string().min(1).max(4096),
    /** Absent on a second registration of the same source: the current lists are kept. */
    owners: z.array(UserName).max(100).optional(),
    /** Who may submit tasks; empty = every signed-in user. */
    submitters: z.array(UserName).max(1000).optional(),
  })
  .strict();
export type RegisterRepoRequest = z.infer<typeof RegisterRepoRequest>;

/**
 * A registration as it runs on the server (`POST /v1/repos` with `Prefer: respond-async` answers
 * 202 with it; `GET /v1/repos/:name/registration` polls it): the local forge's copy takes the
 * default branch first (`registration` is set once it is in and tasks at it can start), then the
 * other branches in batches.
 */
export const RegistrationStatus = z.object({
  name: RepoName,
  source: z.string(),
  state: z.enum(['running', 'done', 'failed']),
  stage: z.enum(['default-branch', 'branches', 'done']),
  /** Refs of the source copied so far, of how many (0 of 0 before the listing). */
  refsDone: z.number().int().min(0),
  refsTotal: z.number().int().min(0),
  /** The fetch running now: its refs, and git's own progress ("Receiving objects", 45 %, 1234 of 2740, "12.00 MiB"). */
  current: z.string().optional(),
  git: z.object({ stage: z.string(), percent: z.number().optional(), done: z.number().optional(), total: z.number().optional(), bytes: z.string().optional() }).optional(),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  /** True when this registration created the name (false: a refresh). */
  created: z.boolean(),
  registration: RepoRegistration.optional(),
  /** Branches that could not be copied, and why (one line). */
  skipped: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string(), hint: z.string().optional(), field: z.string().optional() }).optional(),
});
export type RegistrationStatus = z.infer<typeof RegistrationStatus>;

export const RepoListResponse = z.object({ repos: z.array(RepoRegistration) });
export type RepoListResponse = z.infer<typeof RepoListResponse>;

/** `POST /v1/repos/:name/check`: the commit to check (default: the head of the source's default branch, fetched first). */
export const ReadinessCheckRequest = z
  .object({ sha: z.string().regex(/^[0-9a-f]{40}$/, 'must be a full 40-character lowercase hex commit SHA').optional() })
  .strict();
export type ReadinessCheckRequest = z.infer<typeof ReadinessCheckRequest>;


const Check = z.object({
  ok: z.boolean(),
  detail: z.string(),
  /** What to do when not ok. */
  action: z.string().optional(),
});

/** `dockhand repo check <repo>`: what a person deciding whether to roll out on a repository needs. */
/**
 * What a check without a SHA checked: the head of `branch` at the registered `source` (not the
 * local forge's copy), read when the check began.
 */
const CheckedHead = z.object({ branch: z.string(), source: z.string() });

export const ReadinessReport = z.object({
  repo: z.string(),
  sha: z.string(),
  /** Absent when the check was given its commit. */
  head: CheckedHead.optional(),
  ready: z.boolean(),
  environment: EnvironmentRecipe.optional(),
  snapshot: z
    .object({ image: z.string(), built: z.boolean(), buildSeconds: z.number().min(0).optional(), startSeconds: z.number().min(0).optional() })
    .optional(),
  install: Check.extend({ seconds: z.number().min(0).optional() }),
  tests: Check.extend({
    command: z.string().optional(),
    runner: z.string().optional(),
    passed: z.number().int().min(0).default(0),
    failed: z.number().int().min(0).default(0),
    flaky: z.array(z.string()).default([]),
    /** Tests that fail at this commit before any change: pre-existing, never the agent's. */
    preExistingFailures: z.array(z.string()).default([]),
    seconds: z.number().min(0).optional(),
    /**
     * What a change at this commit can be verified by: tests counted one by one; only a step's exit
     * status (the verification is opaque: green says the command exited 0, not which tests ran);
     * or nothing (no step counted a test nor passed at the base).
     */
    judgedBy: z.enum(['tests', 'exit status', 'nothing']).optional(),
  }),
  selection: Check.extend({ testFiles: z.number().int().min(0).optional(), sourceFiles: z.number().int().min(0).optional() }),
  /** Everything that blocks a rollout, each with what to do. */
  blocking: z.array(z.object({ problem: z.string(), action: z.string() })).default([]),
});
export type ReadinessReport = z.infer<typeof ReadinessReport>;

/**
 * A readiness check runs for minutes (a cold snapshot build, the full suite): the POST answers
 * 202 with this, and `GET /v1/repos/:name/check` answers the same shape until `state` is `done`
 * (with `report`) or `failed` (with `error`).
 */
export const ReadinessCheckStatus = z.object({
  repo: z.string(),
  sha: z.string(),
  head: CheckedHead.optional(),
  state: z.enum(['running', 'done', 'failed']),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  /** Stages so far, oldest first (mirror, snapshot, start, baseline, selection). */
  progress: z.array(z.object({ stage: z.string(), elapsedMs: z.number().int().min(0), line: z.string().max(2000).optional() })),
  report: ReadinessReport.optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type ReadinessCheckStatus = z.infer<typeof ReadinessCheckStatus>;
