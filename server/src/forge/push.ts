import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { DockhandError } from '../errors';
import { processAlive } from '../process-alive';
import { createGit, gitFailure, tryRaw, type GitOptions } from './git';
import { KeyedQueue } from '../keyed-queue';
import { redact } from './redact';

/**
 * The one push. The server applies the sandbox's final diff to its OWN clone at the base SHA,
 * commits as the bot with a `Co-authored-by` trailer for the requester, and pushes one branch.
 *
 * Exactly once across crashes: the branch is first pushed with a lease that requires it not to
 * exist (the common case: one push, no read of the remote before it). When the remote refuses
 * that, the remote branch is read. If it already holds a commit on the same base with the same
 * tree, nothing is pushed (a crash after the push but before recording it is harmless). If it
 * holds something else (an earlier round of the same task), it is replaced with a lease on the
 * exact commit seen, so a concurrent writer is never overwritten.
 *
 * One push at a time per clone: tasks on the same repo share the server's clone of it, and
 * pushes interleaving there fail (first-use `git init`s fight over `.git/config`, fetches into
 * `refs/dockhand/remote/*` over ref locks). Pushes into different clones still run side by side.
 *
 * The token reaches git only through the credential helper in `git.ts`; every message this
 * module returns or throws is redacted.
 */

export interface Person {
  name: string;
  email: string;
}

export const DOCKHAND_BOT: Person = { name: 'Dockhand Bot', email: 'bot@dockhand.invalid' };

/** What signs a commit: the server's key file (`provenance/signing-key.ts`), given to git's SSH signing. */
export interface CommitSigner {
  privateKeyPath: string;
}

/**
 * The server's own trailers after `Co-authored-by:` (issue #33), written by the server only: the
 * message's text can never carry them (`withTrailer` drops `Dockhand-*:` lines from it).
 */
export interface CommitProvenance {
  /** `Dockhand-Task: <id>`. */
  taskId: string;
  /** `Dockhand-Trajectory: <url>`: the task's event log under the server's public URL, when it has one. */
  trajectoryUrl?: string;
}

/**
 * Trailers that depend on the commit being built (`Dockhand-Attestation: sha256:…`, the attestation
 * of this tree on this parent: `provenance/attestation-push.ts`): called once the tree is written
 * and before the commit is made, answering whole `Dockhand-*: value` lines. Called again on a
 * retry, where it must answer the same lines, so the retry builds the identical commit.
 */
export type CommitTrailerHook = (built: { tree: string; parent: string }) => Promise<string[]>;

export interface PushChangeInput {
  /** The server's own clone, created on first use; pushes into it run one at a time. */
  cloneDir: string;
  /** Remote URL or local path, without credentials. */
  remoteUrl: string;
  /** Short-lived token for this push; omit for remotes that need none. */
  token?: string;
  tokenUsername?: string;
  baseSha: string;
  /** Unified diff against `baseSha` (`git diff --binary` output is fine). */
  diff: string;
  /** Full branch name, e.g. from `branchName()`. */
  branch: string;
  /** Commit message: subject line, blank line, body. */
  message: string;
  requester?: Person;
  bot?: Person;
  /** Fixed author/committer date (ISO 8601): a retried push then builds the identical commit. */
  date?: string;
  /**
   * Signs the commit with the server's key (git's SSH signing). Ed25519 signatures are
   * deterministic, so a retry still builds the identical commit. Absent: unsigned.
   */
  signer?: CommitSigner;
  /** The server's `Dockhand-*` trailers. */
  provenance?: CommitProvenance;
  /** More server trailers, made from the commit's tree and parent (the attestation's digest). */
  trailers?: CommitTrailerHook;
  /**
   * Called with `git diff <base> <commit>` of the commit about to be pushed; throwing stops the
   * push. The push gate uses it to check what git actually built, not only what the sandbox sent.
   */
  verifyCommit?: (committedDiff: string) => void | Promise<void>;
}

export interface PushChangeResult {
  branch: string;
  /** The commit the remote branch points at after this call. */
  headSha: string;
  /** False when the branch already held this change and nothing was sent. */
  pushed: boolean;
  /** True when an earlier, different commit on the branch was replaced. */
  replaced: boolean;
  /** What git printed, redacted. */
  output: string;
}

const SHA = /^[0-9a-f]{40}$/;

/**
 * `dockhand/<ticket-id>-<slug>[-<task>]`: ASCII, lower case, safe for every forge. `taskId` makes
 * the branch the task's own (its last 8 characters): a second task on the same issue gets its own
 * branch and PR instead of finding the first one's and reporting it as its own.
 */
export function branchName(ticketId: string, title: string, taskId?: string): string {
  const clean = (text: string, max: number) =>
    text
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '') // accents off: é → e
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, max)
      .replace(/-+$/g, '');
  const id = clean(ticketId, 40) || 'task';
  const slug = clean(title, 48);
  const own = taskId === undefined ? '' : clean(taskId.slice(-8), 8);
  const suffix = own && own !== id ? `-${own}` : '';
  return slug ? `dockhand/${id}-${slug}${suffix}` : `dockhand/${id}${suffix}`;
}

/** Lines of the server's trailer namespace: only the server writes them, never the message's text. */
const SERVER_TRAILER = /^\s*Dockhand-[A-Za-z0-9-]*\s*:/i;
/** A trailer value: one line of printable, non-space ASCII (an id, a URL, a digest). */
const TRAILER_VALUE = /^[\x21-\x7e]{1,2000}$/;

/**
 * The commit message: the text (less any `Dockhand-*:` line), a blank line, then the server's
 * trailers as the last paragraph (what `git interpret-trailers` reads): `Co-authored-by:` the
 * requester, `Dockhand-Task:`, `Dockhand-Trajectory:`, then the hook's (`Dockhand-Attestation:`).
 */
export function withTrailer(message: string, requester: Person | undefined, provenance?: CommitProvenance, more: readonly string[] = []): string {
  const text = message
    .split('\n')
    .filter((line) => !SERVER_TRAILER.test(line))
    .join('\n')
    .trim();
  const trailers = [
    ...(requester ? [`Co-authored-by: ${requester.name} <${requester.email}>`] : []),
    ...(provenance ? provenanceTrailers(provenance) : []),
    ...more.map(checkedTrailer),
  ];
  return trailers.length === 0 ? `${text}\n` : `${text}\n\n${trailers.join('\n')}\n`;
}

/** A hook's trailer line: one of the server's `Dockhand-*` keys and a one-line value. */
function checkedTrailer(line: string): string {
  const match = /^(Dockhand-[A-Za-z0-9-]+): (.*)$/.exec(line);
  if (!match || !TRAILER_VALUE.test(match[2] ?? '')) {
    throw new DockhandError('internal', `commit trailer ${JSON.stringify(line.slice(0, 120))}: must be "Dockhand-<Key>: <value>", the value one line of printable ASCII without spaces`);
  }
  return line;
}

/** The trailers a hook answers for this tree and parent (none without a hook). */
export async function hookTrailers(hook: CommitTrailerHook | undefined, built: { tree: string; parent: string }): Promise<string[]> {
  return hook ? hook(built) : [];
}

function provenanceTrailers(provenance: CommitProvenance): string[] {
  const line = (key: string, field: string, value: string | undefined) => {
    if (value === undefined) return [];
    if (!TRAILER_VALUE.test(value)) {
      throw new DockhandError('bad_request', `provenance.${field}: a trailer value must be one line of printable ASCII without spaces`, { field: `provenance.${field}` });
    }
    return [`${key}: ${value}`];
  };
  return [
    ...line('Dockhand-Task', 'taskId', provenance.taskId),
    ...line('Dockhand-Trajectory', 'trajectoryUrl', provenance.trajectoryUrl),
  ];
}

/**
 * A task's `Dockhand-Task` and `Dockhand-Trajectory` trailers: the link is the task's event log
 * (`GET /v1/tasks/:id/events`, what the trajectory viewer replays) under the server's public URL,
 * when the configuration names one (`DOCKHAND_PUBLIC_URL`).
 */
export function commitProvenance(taskId: string, publicUrl: string | undefined): CommitProvenance {
  if (publicUrl === undefined) return { taskId };
  return { taskId, trajectoryUrl: `${publicUrl.replace(/\/+$/, '')}/v1/tasks/${encodeURIComponent(taskId)}/events` };
}

/**
 * `git commit-tree` arguments that sign with the server's key (git runs `ssh-keygen -Y sign -f
 * <key>`), or none. The key's path is the only thing git learns: the key stays in the server's
 * data dir, read by ssh-keygen, a child of this git.
 */
export function signingArgs(signer: CommitSigner | undefined): { config: string[]; flag: string[] } {
  if (signer === undefined) return { config: [], flag: [] };
  return { config: ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${resolve(signer.privateKeyPath)}`], flag: ['-S'] };
}

/**
 * The message as `git commit -F` would store it (its default "whitespace" clean-up: trailing
 * white space and leading and trailing blank lines gone, runs of blank lines made one), since
 * `git commit-tree` stores it as given.
 */
export function cleanMessage(text: string): string {
  const lines = text.split('\n').map((line) => line.replace(/\s+$/, ''));
  const kept = lines.filter((line, i) => line !== '' || (i > 0 && lines[i - 1] !== ''));
  while (kept[0] === '') kept.shift();
  while (kept.at(-1) === '') kept.pop();
  return `${kept.join('\n')}\n`;
}

function validate(input: PushChangeInput): void {
  if (!SHA.test(input.baseSha)) {
    throw new DockhandError('bad_request', 'baseSha: must be a full 40-character lowercase hex commit SHA', { field: 'baseSha' });
  }
  if (!/^dockhand\/[a-z0-9][a-z0-9._/-]*$/.test(input.branch) || input.branch.includes('..') || input.branch.endsWith('.lock')) {
    throw new DockhandError('bad_request', `branch: "${input.branch}" is not a dockhand/… branch name`, { field: 'branch' });
  }
  if (input.diff.trim() === '') {
    throw new DockhandError('bad_request', 'diff: there is nothing to push', { field: 'diff' });
  }
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(input.remoteUrl)) {
    throw new DockhandError('bad_request', 'remoteUrl: must not contain credentials; pass the token separately', { field: 'remoteUrl' });
  }
}

export async function ensureClone(cloneDir: string): Promise<void> {
  if (existsSync(join(cloneDir, '.git'))) return;
  await mkdir(cloneDir, { recursive: true });
  await createGit(cloneDir).raw(['init', '-q']);
}

const clones = new KeyedQueue();

/**
 * A push's scratch files (index, patch, message) live in the clone's git directory, named by the
 * host and process that made them, so that a process killed mid-push leaves them where the next
 * push into that clone finds them: those of a process of this host that is gone are removed.
 * Another host's (a container sharing the volume, its own pid space) are left alone.
 */
export async function scratchDir(cloneDir: string): Promise<string> {
  const parent = join(cloneDir, '.git', 'dockhand-scratch');
  await mkdir(parent, { recursive: true });
  const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
  for (const name of await readdir(parent)) {
    const match = /^(.+)-(\d+)-[^-]+$/.exec(name);
    if (!match || match[1] !== host || Number(match[2]) === process.pid || processAlive(Number(match[2]))) continue;
    await rm(join(parent, name), { recursive: true, force: true });
  }
  return mkdtemp(join(parent, `${host}-${process.pid}-`));
}

/** Runs `work` when no other push runs in `cloneDir` (a follow-up push shares the clone: `follow-push.ts`). */
export function inClone<T>(cloneDir: string, work: () => Promise<T>): Promise<T> {
  return clones.run(resolve(cloneDir), work);
}

export async function pushChange(input: PushChangeInput): Promise<PushChangeResult> {
  validate(input);
  return clones.run(resolve(input.cloneDir), () => pushInClone(input));
}

async function pushInClone(input: PushChangeInput): Promise<PushChangeResult> {
  const secrets = [input.token];
  const log: string[] = [];
  const note = (text: string) => {
    if (text.trim()) log.push(redact(text.trim(), secrets));
  };
  const remoteOptions: GitOptions = { token: input.token, username: input.tokenUsername };
  await ensureClone(input.cloneDir);
  const clone = createGit(input.cloneDir);
  const remote = createGit(input.cloneDir, remoteOptions);

  // 1. The base commit, fetched from the remote when this clone has not seen it yet.
  if ((await tryRaw(clone, ['cat-file', '-e', `${input.baseSha}^{commit}`])) === undefined) {
    try {
      note(await remote.raw(['fetch', '--no-tags', '--quiet', input.remoteUrl, '+refs/heads/*:refs/dockhand/remote/*']));
    } catch (error) {
      throw gitFailure('fetching the base commit', error, secrets);
    }
    if ((await tryRaw(clone, ['cat-file', '-e', `${input.baseSha}^{commit}`])) === undefined) {
      throw new DockhandError('not_found', `base commit ${input.baseSha} is not on any branch of the remote`, { field: 'baseSha' });
    }
  }

  // 2. Apply and commit on a scratch index (plumbing: no worktree is checked out, so a large
  // repository costs no checkout and the clone is never dirty): the base tree read into the
  // index, the diff applied to it, the tree written and committed with the base as parent. Five
  // git children where a worktree took nine, and each is a fork of the server.
  const scratch = await scratchDir(input.cloneDir);
  const patchFile = join(scratch, 'change.diff');
  const messageFile = join(scratch, 'message.txt');
  let headSha: string;
  let tree: string;
  try {
    const bot = input.bot ?? DOCKHAND_BOT;
    const work = createGit(input.cloneDir, { date: input.date, indexFile: join(scratch, 'index') });
    await work.raw(['read-tree', input.baseSha]);
    await writeFile(patchFile, input.diff.endsWith('\n') ? input.diff : `${input.diff}\n`);
    try {
      await work.raw(['apply', '--cached', '--whitespace=nowarn', patchFile]);
    } catch (error) {
      throw gitFailure(`the diff does not apply to ${input.baseSha}`, error, secrets, 'conflict');
    }
    tree = (await work.raw(['write-tree'])).trim();
    const more = await hookTrailers(input.trailers, { tree, parent: input.baseSha });
    await writeFile(messageFile, cleanMessage(withTrailer(input.message, input.requester, input.provenance, more)));
    const sign = signingArgs(input.signer);
    try {
      headSha = (await work.raw(['-c', `user.name=${bot.name}`, '-c', `user.email=${bot.email}`, ...sign.config, 'commit-tree', ...sign.flag, tree, '-p', input.baseSha, '-F', messageFile])).trim();
    } catch (error) {
      throw gitFailure(input.signer ? 'signing the commit with the server\'s key (git runs ssh-keygen: Debian\'s openssh-client)' : 'making the commit', error, secrets);
    }
    if (input.verifyCommit) {
      await input.verifyCommit(await work.raw(['diff', '--binary', '--find-renames', input.baseSha, headSha]));
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }

  // 3. Push with a lease on exactly what was seen — at first, that the branch does not exist yet.
  const ref = `refs/heads/${input.branch}`;
  // `--porcelain` says per ref what happened: '=' is a branch that already held this very commit
  // (a retry after a crash built the same commit): the lease is not even asked, nothing is sent.
  const push = async (expected: string | undefined): Promise<'pushed' | 'up to date'> => {
    const output = await remote.raw(['push', '--porcelain', '--no-verify', `--force-with-lease=${ref}:${expected ?? ''}`, input.remoteUrl, `${headSha}:${ref}`]);
    note(output.split('\n').filter((line) => line.includes('\t')).join('\n'));
    return output.split('\n').some((line) => line.startsWith('=\t')) ? 'up to date' : 'pushed';
  };
  let firstRefusal: unknown;
  try {
    if ((await push(undefined)) === 'up to date') {
      note(`${input.branch} already holds this change at ${headSha}; nothing pushed`);
      return { branch: input.branch, headSha, pushed: false, replaced: false, output: log.join('\n') };
    }
    return { branch: input.branch, headSha, pushed: true, replaced: false, output: log.join('\n') };
  } catch (error) {
    firstRefusal = error;
  }

  // 4. Refused: what does the remote branch hold? Nothing — the refusal was not about the branch.
  let remoteSha: string | undefined;
  try {
    const listing = (await remote.raw(['ls-remote', input.remoteUrl, ref])).trim();
    remoteSha = listing ? listing.split(/\s+/)[0] : undefined;
  } catch (error) {
    throw gitFailure('reading the remote branch', error, secrets);
  }
  if (remoteSha === undefined) throw gitFailure(`pushing ${input.branch}`, firstRefusal, secrets, 'conflict');
  if ((await tryRaw(clone, ['cat-file', '-e', `${remoteSha}^{commit}`])) === undefined) {
    try {
      note(await remote.raw(['fetch', '--no-tags', '--quiet', input.remoteUrl, `+${ref}:refs/dockhand/remote/${input.branch}`]));
    } catch (error) {
      throw gitFailure('fetching the remote branch', error, secrets);
    }
  }
  // One child for both (it fails for a root commit, which cannot hold this change anyway).
  const [remoteTree, remoteParent] = (await tryRaw(clone, ['rev-parse', `${remoteSha}^{tree}`, `${remoteSha}^`]))?.split('\n') ?? [];
  if (remoteTree === tree && remoteParent === input.baseSha) {
    note(`${input.branch} already holds this change at ${remoteSha}; nothing pushed`);
    return { branch: input.branch, headSha: remoteSha, pushed: false, replaced: false, output: log.join('\n') };
  }
  try {
    if ((await push(remoteSha)) === 'up to date') {
      return { branch: input.branch, headSha, pushed: false, replaced: false, output: log.join('\n') };
    }
  } catch (error) {
    throw gitFailure(`pushing ${input.branch}`, error, secrets, 'conflict');
  }
  return { branch: input.branch, headSha, pushed: true, replaced: true, output: log.join('\n') };
}
