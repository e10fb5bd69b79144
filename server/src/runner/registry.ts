import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { existsSync } from 'node:fs';
import { RepoName, type RegisterRepoRequest, type RegistrationStatus, type RepoContext, type RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { FETCH_INACTIVITY_MS, LocalForge, type ImportProgress } from '../forge/local-forge';
import { readSourceRefs, sourceDefaultBranch } from '../forge/source-branch';
import { checkGitSource, GitCommandError } from '../git-child';
import type { RepoMirror } from '../sandbox/mirror';
import type { Logger } from '../log';
import type { RepoStore, User } from '../store/types';

/*
 * Registered repositories: who may submit, where the mirror comes from. The one place that
 * turns a task's `context.repo` into a registration, and a registration into git work.
 *
 * - `register` (admins) checks the source's form (`checkGitSource`), asks the source for its
 *   default branch (`git ls-remote`, with a timeout; a clone checked out at a commit answers
 *   through its origin's HEAD or its branches, forge/source-branch.ts), and with the local forge
 *   copies its branches into `<data>/forge/<name>.git`, whose HEAD names that branch and which
 *   becomes the registration's `mirrorSource`. The branch stored is the branch the forge's HEAD
 *   names and the one `repo add` prints.
 * - `admit` (every `POST /v1/tasks`) finds the registration, checks the caller may submit, and
 *   makes sure the base commit exists, fetching from the registered source when the mirror lacks
 *   it; it never touches the string the user typed except to compare it with registrations.
 */

export interface RegistryOptions {
  store: RepoStore;
  mirror: RepoMirror;
  /** The local forge, when it is the forge (registrations then get a bare repository in it). */
  localForge?: LocalForge;
  /** Total limit of each short git call to a source (ls-remote; default 60 s). */
  timeoutMs?: number;
  /** A fetch from a source is stopped after this long without progress (default 120 s), never at a total time. */
  inactivityMs?: number;
  /** Where a registration's skipped branches (history incomplete at the source) are said. */
  logger?: Logger;
}

/** The value a client typed for `context.repo`, compared without trailing slashes or `.git`. */
function comparable(value: string): string {
  return value.replace(/\/+$/, '').replace(/\.git$/, '');
}

export function maySubmit(registration: RepoRegistration, user: User): boolean {
  return user.role === 'admin'
    || registration.owners.includes(user.name)
    || registration.submitters.length === 0
    || registration.submitters.includes(user.name);
}

/** A registration name a path or URL would get: its last segment without `.git`. */
export function suggestedName(source: string): string {
  const last = basename(source.replace(/\/+$/, '').replace(/^.*:/, '')).replace(/\.git$/, '');
  const cleaned = last.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return cleaned || 'repo';
}

/** `RepoMirror`'s `sources`: a registered name → where its mirror is made from. */
export function registeredSource(store: RepoStore): (name: string) => Promise<string> {
  return async (name) => {
    const registration = await store.getRepo(name);
    if (!registration) {
      throw new DockhandError('not_found', `repository ${name} is not registered`, { field: 'repo', hint: `an admin registers it: dockhand repo add ${name} --from <path or URL>` });
    }
    return registration.mirrorSource ?? registration.source;
  };
}

/**
 * A forge repository (`<data>/forge/<name>.git`) is the server's own copy of a registered source,
 * which tasks push to: registered as a source, its tasks' branches would come back as its base,
 * and a second name would share one copy. Symlinks are followed before comparing.
 */
async function refuseForgeCopy(source: string, forgeRoot: string): Promise<void> {
  const real = async (path: string) => realpath(path).catch(() => path);
  const inside = relative(await real(forgeRoot), await real(source));
  if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) {
    throw new DockhandError('bad_request', `source: ${source} is inside the local forge (${forgeRoot}), the server's own copies of registered repositories; it cannot be a source`, {
      field: 'source',
      hint: 'register the repository it was copied from (dockhand repo list shows each registration\'s source)',
    });
  }
}

/** A registration running (or run) on this server: its status, and its end. */
export interface RegistrationJob {
  status: RegistrationStatus;
  finished: Promise<{ registration: RepoRegistration; created: boolean }>;
}

export class RepoRegistry {
  /** The last registration of each name on this server (a status a client polls). */
  private readonly jobs = new Map<string, RegistrationJob>();

  constructor(private readonly options: RegistryOptions) {}

  /** The registration a client's value names: its name, its source or its local-forge copy. */
  async find(value: string): Promise<RepoRegistration | undefined> {
    const byName = RepoName.safeParse(value).success ? await this.options.store.getRepo(value) : undefined;
    if (byName) return byName;
    const wanted = comparable(value);
    return (await this.options.store.listRepos()).find((registration) =>
      comparable(registration.source) === wanted || (registration.mirrorSource !== undefined && comparable(registration.mirrorSource) === wanted));
  }

  /**
   * Registers and copies (see `start`), answering once every branch is copied or the copy failed:
   * the synchronous `POST /v1/repos`, and the server's own callers.
   */
  async register(request: RegisterRepoRequest, by: User): Promise<{ registration: RepoRegistration; created: boolean }> {
    return (await this.start(request, by)).finished;
  }

  /**
   * Checks the request (source form, name, the source's default branch: a bad source is refused
   * here, before anything runs) and starts the copy in the background, on the server, not bound
   * to the HTTP request: the default branch first (then the registration is stored and tasks at it
   * can start), then the other branches in batches (`forge/branch-copy.ts`). A registration of the
   * same name already running is joined, not started twice. Nothing here waits on another
   * repository: each copy has its own queue and git children.
   */
  async start(request: RegisterRepoRequest, by: User): Promise<RegistrationJob> {
    const { store, localForge } = this.options;
    const checked = checkGitSource(request.source, 'source');
    const source = checked.source;
    if (localForge && checked.kind === 'path') await refuseForgeCopy(source, dirname(localForge.repositoryPath(request.name)));
    if (localForge && request.name.includes('/')) {
      throw new DockhandError('bad_request', `name: the local forge names repositories with one segment ("${request.name.replace('/', '-')}", not "${request.name}")`, { field: 'name' });
    }
    const existing = await store.getRepo(request.name);
    if (existing && existing.source !== source) {
      throw new DockhandError('conflict', `name: ${request.name} is already registered from ${existing.source}`, {
        field: 'name',
        hint: `pick another name, or remove it first: dockhand repo remove ${request.name}`,
      });
    }
    const running = this.jobs.get(request.name);
    if (running?.status.state === 'running' && running.status.source === source) return running;
    let defaultBranch: string;
    let listing: string;
    try {
      ({ branch: defaultBranch, listing } = await readSourceRefs(this.options.mirror.children, source, { timeoutMs: this.shortLimit(), ...(existing ? { known: existing.defaultBranch } : {}) }));
    } catch (error) {
      throw this.sourceFailure(source, error);
    }
    const status: RegistrationStatus = { name: request.name, source, state: 'running', stage: 'default-branch', refsDone: 0, refsTotal: 0, startedAt: new Date().toISOString(), created: !existing };
    const finished = this.copy(request, by, { source, defaultBranch, listing, existing, status }).then(
      (result) => {
        Object.assign(status, { state: 'done', stage: 'done', finishedAt: new Date().toISOString() });
        delete status.git;
        delete status.current;
        return result;
      },
      (error: unknown) => {
        const failure = this.sourceFailure(source, error);
        Object.assign(status, { state: 'failed', finishedAt: new Date().toISOString(), error: { code: failure.code, message: failure.message, ...(failure.hint ? { hint: failure.hint } : {}), ...(failure.field ? { field: failure.field } : {}) } });
        throw failure;
      },
    );
    // A background registration nobody awaits must not become an unhandled rejection.
    finished.catch(() => undefined);
    const job = { status, finished };
    this.jobs.set(request.name, job);
    return job;
  }

  /** The last registration of `name` this server ran (running, done or failed). */
  registrationStatus(name: string): RegistrationStatus | undefined {
    return this.jobs.get(name)?.status;
  }

  private async copy(
    request: RegisterRepoRequest,
    by: User,
    job: { source: string; defaultBranch: string; listing: string; existing: RepoRegistration | undefined; status: RegistrationStatus },
  ): Promise<{ registration: RepoRegistration; created: boolean }> {
    const { store, localForge } = this.options;
    const { source, defaultBranch, listing, existing, status } = job;
    const onSkipped = (summary: string) => {
      status.skipped = summary;
      this.options.logger?.warn({ repo: request.name }, `repo add ${request.name}: ${summary}`);
    };
    const onProgress = (progress: ImportProgress) => {
      status.refsDone = progress.refsDone;
      status.refsTotal = progress.refsTotal;
      if (progress.current) status.current = progress.current;
      if (progress.git) status.git = progress.git;
      else delete status.git;
    };
    const git = { children: this.options.mirror.children, timeoutMs: this.shortLimit(), inactivityMs: this.options.inactivityMs ?? FETCH_INACTIVITY_MS, defaultBranch, onSkipped, onProgress };
    const store_ = async (mirrorSource: string | undefined) =>
      store.putRepo({
        name: request.name,
        source,
        ...(mirrorSource && mirrorSource !== source ? { mirrorSource } : {}),
        defaultBranch,
        owners: request.owners ?? existing?.owners ?? [],
        submitters: request.submitters ?? existing?.submitters ?? [],
        createdAt: existing?.createdAt ?? new Date().toISOString(),
        createdBy: existing?.createdBy ?? by.name,
      });
    if (!localForge) {
      const registration = await store_(undefined);
      status.registration = registration;
      return { registration, created: !existing };
    }
    const copied = existsSync(join(localForge.repositoryPath(request.name), 'HEAD'));
    // The default branch first: once it is in, the registration is stored and tasks at it can
    // start; every other branch follows in batches (what is already here at the source's commit is skipped).
    const refresh = existing !== undefined && copied;
    const onDefaultBranch = async () => {
      // A new copy's HEAD already names it; a refreshed one's branches have only been fetched.
      if (refresh) await localForge.pointHead(request.name, defaultBranch);
      status.registration = await store_(localForge.repositoryPath(request.name));
      status.stage = 'branches';
    };
    if (refresh) await localForge.refreshFrom(request.name, source, { ...git, onDefaultBranch, sourceListing: listing });
    else await localForge.createRepository(request.name, source, { ...git, onDefaultBranch, sourceListing: listing });
    if (refresh || !(await localForge.hasBranch(request.name, defaultBranch))) await localForge.pointHead(request.name, defaultBranch);
    if (!status.registration) status.registration = await store_(localForge.repositoryPath(request.name));
    return { registration: status.registration, created: !existing };
  }

  private shortLimit(): number {
    return this.options.timeoutMs ?? 60_000;
  }

  /**
   * The registration a task may be submitted for, with its base commit in the mirror; throws a
   * 4xx naming `context.repo` (or `context.baseSha`) and saying what to run.
   */
  async admit(user: User, context: RepoContext, options: { signal?: AbortSignal } = {}): Promise<RepoRegistration> {
    const registration = await this.find(context.repo);
    if (!registration) throw this.unregistered(context.repo);
    // A repository one may not submit to is one one may not see: the same 404 as an unregistered
    // one, naming no owner (issue 31; the rule is in api/README.md).
    if (!maySubmit(registration, user)) throw this.unregistered(context.repo);
    await this.ensureCommit(registration, context.baseSha, { ...options, ...(context.branch ? { branch: context.branch } : {}) });
    return registration;
  }

  /**
   * The commit in the mirror, fetched from the registered source when missing. With the local
   * forge, a branch the task names that the copy lacks (made at the source after the registration)
   * is fetched first, alone: the PR's base is that branch when the forge has it. Not while the
   * registration still copies: copies of one repository run one at a time, so that fetch would wait
   * for the whole copy. A commit still missing is looked for on the default branch, then on every branch.
   */
  async ensureCommit(registration: RepoRegistration, sha: string, options: { signal?: AbortSignal; branch?: string } = {}): Promise<void> {
    const { mirror, localForge } = this.options;
    const ensure = () => mirror.ensure(registration.name, sha, { timeoutMs: this.shortLimit(), ...(options.signal ? { signal: options.signal } : {}) });
    const git = { children: mirror.children, timeoutMs: this.shortLimit(), inactivityMs: this.options.inactivityMs ?? FETCH_INACTIVITY_MS, ...(options.signal ? { signal: options.signal } : {}) };
    const copying = this.jobs.get(registration.name)?.status.state === 'running';
    try {
      if (localForge && registration.mirrorSource && options.branch && !copying && !(await localForge.hasBranch(registration.name, options.branch).catch(() => true))) {
        // Only a branch the source has: a task may name a branch of its own that exists nowhere yet.
        await localForge.refreshFrom(registration.name, registration.source, { ...git, branches: [options.branch] }).catch(() => undefined);
      }
      try {
        await ensure();
      } catch (error) {
        // A commit made after the registration: the forge's copy learns it from the source first.
        if (!(error instanceof DockhandError && error.code === 'not_found') || !localForge || !registration.mirrorSource) throw error;
        const named = [...new Set([registration.defaultBranch, ...(options.branch ? [options.branch] : [])])];
        await localForge.refreshFrom(registration.name, registration.source, { ...git, branches: named });
        if (!(await mirror.holds(registration.name, sha).catch(() => false))) {
          await ensure().catch(async (again: unknown) => {
            if (!(again instanceof DockhandError && again.code === 'not_found')) throw again;
            await localForge.refreshFrom(registration.name, registration.source, git);
          });
        }
        await ensure();
      }
    } catch (error) {
      if (error instanceof DockhandError && error.code === 'not_found') {
        throw new DockhandError('not_found', `context.baseSha: commit ${sha} is not in ${registration.name} (registered from ${registration.source})`, {
          field: 'context.baseSha',
          hint: `commit it on a branch of ${registration.source} (or push it there) and send the task again`,
        });
      }
      throw this.sourceFailure(registration.source, error, 'context.repo');
    }
    const head = await mirror.defaultBranch(registration.name);
    if (head && head !== registration.defaultBranch) await this.options.store.putRepo({ ...registration, defaultBranch: head });
  }

  /**
   * What a readiness check without a SHA checks: the head of the source's default branch now,
   * read from the registered source, not from the local forge's copy (which learns a source's new
   * commits only when a task names one). The copy is refreshed from the source first (its branches
   * move only forward; the source's own heads are kept beside them), so the commit is in the mirror.
   * Without the local forge the mirror is made from the source itself and its fetch does the same.
   */
  async sourceHead(registration: RepoRegistration, options: { signal?: AbortSignal } = {}): Promise<{ sha: string; branch: string; source: string }> {
    const { mirror, localForge } = this.options;
    const git = { children: mirror.children, timeoutMs: this.shortLimit(), ...(options.signal ? { signal: options.signal } : {}) };
    try {
      const branch = await sourceDefaultBranch(mirror.children, registration.source, { ...git, known: registration.defaultBranch });
      if (!localForge || !registration.mirrorSource) {
        return { sha: await mirror.branchHead(registration.name, branch, git), branch, source: registration.source };
      }
      // The default branch alone: a monorepo's thousands of other branches are not fetched for it.
      const sourceSha = (await localForge.refreshFrom(registration.name, registration.source, { ...git, inactivityMs: this.options.inactivityMs ?? FETCH_INACTIVITY_MS, branches: [branch] })).get(branch);
      if (!sourceSha) throw new DockhandError('not_found', `branch ${branch} is not in ${registration.source}`, { field: 'branch', hint: 'pass a commit SHA instead (--sha)' });
      // Where the copy's branch is ahead of the source's (PRs merged on the forge on top of it), its
      // head is the branch's newest state; where it went another way, the source's head is checked.
      const forgeSha = await localForge.branchAheadOf(registration.name, branch, sourceSha, git);
      const sha = forgeSha ?? sourceSha;
      await this.ensureCommit(registration, sha, options);
      return { sha, branch, source: forgeSha ? `dockhand-local://${registration.name}` : registration.source };
    } catch (error) {
      throw this.sourceFailure(registration.source, error, 'repo');
    }
  }

  private unregistered(value: string): DockhandError {
    let form: ReturnType<typeof checkGitSource> | undefined;
    try {
      form = checkGitSource(value, 'context.repo');
    } catch {
      form = undefined;
    }
    if (RepoName.safeParse(value).success && !value.includes('.git')) {
      return new DockhandError('not_found', `context.repo: no repository named ${value} is registered`, {
        field: 'context.repo',
        hint: `an admin registers it: dockhand repo add ${value} --from <path or URL> (registered ones: dockhand repo list)`,
      });
    }
    if (form) {
      const name = suggestedName(form.source);
      return new DockhandError('not_found', `context.repo: ${value} is not a registered repository`, {
        field: 'context.repo',
        hint: `an admin registers it: dockhand repo add ${name} --from ${form.source}, then submit with --repo ${name}`,
      });
    }
    return new DockhandError('bad_request', `context.repo: ${JSON.stringify(value.slice(0, 200))} is not the name of a registered repository`, {
      field: 'context.repo',
      hint: 'name a registered repository (dockhand repo list); an admin registers one with: dockhand repo add <name> --from <path or URL>',
    });
  }

  private sourceFailure(source: string, error: unknown, field = 'source'): DockhandError {
    if (error instanceof GitCommandError) {
      return new DockhandError('bad_request', `${field}: ${source} is not a git repository the server can read (${error.message})`, {
        field,
        hint: 'give an absolute path of a git repository on the server host, or a URL the server can reach',
      });
    }
    if (error instanceof DockhandError) {
      return error.field ? error : new DockhandError(error.code, error.message, { field, ...(error.hint ? { hint: error.hint } : {}) });
    }
    return new DockhandError('internal', `${source}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
