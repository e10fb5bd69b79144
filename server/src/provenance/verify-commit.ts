import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockhandError } from '../errors';
import { createGit, tryRaw, type Git } from '../forge/git';
import { DOCKHAND_BOT } from '../forge/push';

/*
 * `dockhand verify commit <repo> <sha>`: a list of named checks, each `{ check, ok, detail }`, so a
 * reader sees what was checked and which one failed, not one yes or no. This module holds the
 * commit's own checks — the SSH signature against an allowed-signers file made from the server's
 * key (git's `gpg.ssh.allowedSignersFile`, the check `git verify-commit` makes), the committer,
 * the server's trailers. Other parts of issue #33 append theirs (the attestation's signature, the
 * tree against the approved diff, the hash chain) as more `CommitCheckStep`s: each gets the commit
 * already read, and what it needs beyond that it reads itself.
 *
 * It does not trust the commit's message for anything but naming: a `Dockhand-Task` trailer says
 * which task to look at, it proves nothing until a signed attestation agrees.
 */

export interface CommitCheck {
  /** A short stable name: `commit`, `signature`, `committer`, `trailers`, … */
  check: string;
  ok: boolean;
  /** What was found, in a sentence: why it failed, or what passed. */
  detail: string;
}

/** The commit being checked, read once for every step. */
export interface CommitUnderCheck {
  repoDir: string;
  /** The full SHA. */
  sha: string;
  /** Git in `repoDir` (allowlisted environment, `forge/git.ts`). */
  git: Git;
  tree: string;
  parents: string[];
  committer: { name: string; email: string };
  message: string;
  /** The message's trailers as git parses them (`git interpret-trailers --parse`), in order. */
  trailers: Array<{ key: string; value: string }>;
  /** The allowed-signers file the signature was checked against (removed after the steps ran). */
  allowedSignersFile: string;
}

export type CommitCheckStep = (commit: CommitUnderCheck) => Promise<CommitCheck[]>;

export interface VerifyCommitInput {
  /** A git repository (bare or not) holding the commit. */
  repoDir: string;
  /** A commit SHA (or a branch name). */
  revision: string;
  /** The `allowed_signers` file's text (`allowedSignersLine` of the server's key). */
  allowedSigners: string;
  /** The committer the server writes as; default `DOCKHAND_BOT`. */
  committer?: { name: string; email: string };
}

const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,250}$/;

/** The signature, the committer and the trailers, then `more` (the attestation's steps). */
export async function verifyCommit(input: VerifyCommitInput, more: CommitCheckStep[] = []): Promise<CommitCheck[]> {
  if (!REVISION.test(input.revision) || input.revision.includes('..')) {
    throw new DockhandError('bad_request', `sha: ${JSON.stringify(input.revision.slice(0, 100))} is not a commit SHA or branch name`, { field: 'sha' });
  }
  const git = createGit(input.repoDir);
  const sha = await tryRaw(git, ['rev-parse', '--verify', '--quiet', `${input.revision}^{commit}`]);
  if (!sha) return [{ check: 'commit', ok: false, detail: `${input.revision} is not a commit in ${input.repoDir}` }];
  const scratch = await mkdtemp(join(tmpdir(), 'dockhand-verify-'));
  try {
    const allowedSignersFile = join(scratch, 'allowed_signers');
    await writeFile(allowedSignersFile, input.allowedSigners.endsWith('\n') ? input.allowedSigners : `${input.allowedSigners}\n`, { mode: 0o600 });
    const commit = await readCommit(git, input.repoDir, sha, allowedSignersFile);
    const results: CommitCheck[] = [{ check: 'commit', ok: true, detail: `${sha} in ${input.repoDir}` }];
    for (const step of [checkSignature, checkCommitter(input.committer ?? DOCKHAND_BOT), checkTrailers, ...more]) {
      results.push(...(await step(commit)));
    }
    return results;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function readCommit(git: Git, repoDir: string, sha: string, allowedSignersFile: string): Promise<CommitUnderCheck> {
  const [tree = '', parents = '', name = '', email = '', ...rest] = (await git.raw(['log', '-1', '--format=%T%x00%P%x00%cn%x00%ce%x00%B', sha])).split('\0');
  const message = rest.join('\0');
  // git's own trailer parser (the last paragraph, its rules), fed the message on stdin: no shell, no file.
  const parsed = await parseTrailers(git, sha);
  const trailers = parsed.flatMap((line) => {
    const match = /^([^:]+):\s?(.*)$/.exec(line);
    return match ? [{ key: match[1]!.trim(), value: match[2]!.trim() }] : [];
  });
  return { repoDir, sha, git, tree, parents: parents.split(' ').filter(Boolean), committer: { name, email }, message, trailers, allowedSignersFile };
}

async function parseTrailers(git: Git, sha: string): Promise<string[]> {
  // `%(trailers:only,unfold)` is `git interpret-trailers --parse` on the commit's message.
  const text = await git.raw(['log', '-1', '--format=%(trailers:only,unfold)', sha]);
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** What git's `%G?` letter means for an SSH signature, as a reader should hear it. */
function signatureVerdict(letter: string, key: string, principal: string, why: string): CommitCheck {
  const check = 'signature';
  switch (letter) {
    case 'G':
      return { check, ok: true, detail: `good SSH signature by ${principal} with key ${key} (in the allowed signers)` };
    case 'U':
      return { check, ok: false, detail: `signed by another key (${key}), not the server's: no principal in the allowed signers file has it` };
    case 'N':
      return { check, ok: false, detail: 'the commit is not signed' };
    case 'B':
      return { check, ok: false, detail: `bad signature: the commit was changed after it was signed, or the signature is damaged${why ? ` (${why})` : ''}` };
    case 'X':
    case 'Y':
      return { check, ok: false, detail: `the signature or its key has expired${why ? ` (${why})` : ''}` };
    case 'R':
      return { check, ok: false, detail: `the signing key is revoked${why ? ` (${why})` : ''}` };
    default:
      return { check, ok: false, detail: `the signature cannot be checked${why ? `: ${why}` : ''} (git runs ssh-keygen: Debian's openssh-client)` };
  }
}

const checkSignature: CommitCheckStep = async (commit) => {
  const config = ['-c', `gpg.ssh.allowedSignersFile=${commit.allowedSignersFile}`];
  const [letter = '', key = '', principal = ''] = (await commit.git.raw([...config, 'log', '-1', '--format=%G?%x00%GK%x00%GS', commit.sha])).trim().split('\0');
  // `git verify-commit` says why in its own words (stderr) when the letter alone is not enough.
  let why = '';
  if (letter !== 'G' && letter !== 'N' && letter !== 'U') {
    try {
      await commit.git.raw([...config, 'verify-commit', commit.sha]);
    } catch (error) {
      why = (error instanceof Error ? error.message : String(error)).trim().split('\n').filter(Boolean).slice(-2).join('; ').slice(0, 300);
    }
  }
  return [signatureVerdict(letter, key, principal, why)];
};

function checkCommitter(expected: { name: string; email: string }): CommitCheckStep {
  return async (commit) => {
    const { name, email } = commit.committer;
    const ok = name === expected.name && email === expected.email;
    return [{ check: 'committer', ok, detail: ok ? `${name} <${email}>` : `${name} <${email}>, not the server's ${expected.name} <${expected.email}>` }];
  };
}

const checkTrailers: CommitCheckStep = async (commit) => {
  const tasks = commit.trailers.filter((trailer) => trailer.key.toLowerCase() === 'dockhand-task');
  if (tasks.length !== 1) {
    return [{ check: 'trailers', ok: false, detail: tasks.length === 0 ? 'no Dockhand-Task trailer: the server did not write this message' : `${tasks.length} Dockhand-Task trailers; the server writes one` }];
  }
  const named = commit.trailers.filter((trailer) => /^(dockhand-|co-authored-by$)/i.test(trailer.key)).map((trailer) => `${trailer.key}: ${trailer.value}`);
  return [{ check: 'trailers', ok: true, detail: named.join('; ') }];
};
