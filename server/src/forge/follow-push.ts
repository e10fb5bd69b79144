import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DockhandError } from '../errors';
import { createGit, gitFailure, tryRaw, type GitOptions } from './git';
import { cleanMessage, DOCKHAND_BOT, ensureClone, hookTrailers, inClone, scratchDir, signingArgs, withTrailer, type CommitProvenance, type CommitSigner, type CommitTrailerHook, type Person } from './push';
import { redact } from './redact';

/**
 * A follow-up round's one push: ONE new commit on the PR's branch, on top of what the branch holds
 * (`parentSha`), never a force-push and never rewritten history. Its tree is the base plus the
 * task's whole diff (what the PR is now), so the commit's own diff against its parent is exactly
 * what the round changed.
 *
 * Exactly once across crashes: the commit is built the same way again on a retry (same tree,
 * parent, message and date: the same SHA), and it is pushed without force, so the remote takes it
 * only as a fast-forward of `parentSha`. A branch that already holds it (`=`), or holds a commit
 * on `parentSha` with the same tree, is this round's push already made. A branch that moved
 * elsewhere (someone pushed to it) is a conflict naming what it holds: nothing is overwritten.
 * A round whose tree is the parent's (the comment needed no code change) pushes nothing.
 */

export interface FollowUpPushInput {
  cloneDir: string;
  remoteUrl: string;
  token?: string;
  tokenUsername?: string;
  baseSha: string;
  /** The PR branch's head before this round (the last push). */
  parentSha: string;
  /** The task's whole diff against `baseSha` after this round. */
  diff: string;
  branch: string;
  message: string;
  requester?: Person;
  /** Fixed author/committer date (ISO 8601): a retry builds the identical commit. */
  date?: string;
  /** Signs the commit with the server's key (deterministic: a retry still builds the same commit). */
  signer?: CommitSigner;
  /** The server's `Dockhand-*` trailers. */
  provenance?: CommitProvenance;
  /** More server trailers from the commit's tree and parent (the round's attestation digest). */
  trailers?: CommitTrailerHook;
}

export interface FollowUpPushResult {
  headSha: string;
  /** False when the round changed no code: no commit was made. */
  commit: boolean;
  /** False when nothing was sent (no commit, or the branch already held it). */
  pushed: boolean;
  output: string;
}

export async function pushFollowUp(input: FollowUpPushInput): Promise<FollowUpPushResult> {
  if (!/^dockhand\//.test(input.branch)) throw new DockhandError('bad_request', `branch: "${input.branch}" is not a dockhand/… branch`, { field: 'branch' });
  return inClone(input.cloneDir, () => followUpInClone(input));
}

async function followUpInClone(input: FollowUpPushInput): Promise<FollowUpPushResult> {
  const secrets = [input.token];
  const log: string[] = [];
  const note = (text: string) => {
    if (text.trim()) log.push(redact(text.trim(), secrets));
  };
  const remoteOptions: GitOptions = { token: input.token, username: input.tokenUsername };
  await ensureClone(input.cloneDir);
  const clone = createGit(input.cloneDir);
  const remote = createGit(input.cloneDir, remoteOptions);
  const ref = `refs/heads/${input.branch}`;
  const missing = async () =>
    (await tryRaw(clone, ['cat-file', '-e', `${input.baseSha}^{commit}`])) === undefined || (await tryRaw(clone, ['cat-file', '-e', `${input.parentSha}^{commit}`])) === undefined;
  if (await missing()) {
    try {
      note(await remote.raw(['fetch', '--no-tags', '--quiet', input.remoteUrl, '+refs/heads/*:refs/dockhand/remote/*']));
    } catch (error) {
      throw gitFailure('fetching the PR branch', error, secrets);
    }
    if (await missing()) throw new DockhandError('not_found', `the PR branch's head ${input.parentSha} or the base ${input.baseSha} is not on the remote`, { field: 'parentSha' });
  }

  const scratch = await scratchDir(input.cloneDir);
  let tree: string;
  let headSha: string;
  try {
    const work = createGit(input.cloneDir, { date: input.date, indexFile: join(scratch, 'index') });
    await work.raw(['read-tree', input.baseSha]);
    const patchFile = join(scratch, 'change.diff');
    await writeFile(patchFile, input.diff.endsWith('\n') ? input.diff : `${input.diff}\n`);
    try {
      if (input.diff.trim() !== '') await work.raw(['apply', '--cached', '--whitespace=nowarn', patchFile]);
    } catch (error) {
      throw gitFailure(`the task's diff does not apply to ${input.baseSha}`, error, secrets, 'conflict');
    }
    tree = (await work.raw(['write-tree'])).trim();
    const parentTree = (await clone.raw(['rev-parse', `${input.parentSha}^{tree}`])).trim();
    if (tree === parentTree) {
      note(`the round changed no code: ${input.branch} stays at ${input.parentSha}`);
      return { headSha: input.parentSha, commit: false, pushed: false, output: log.join('\n') };
    }
    const messageFile = join(scratch, 'message.txt');
    const more = await hookTrailers(input.trailers, { tree, parent: input.parentSha });
    await writeFile(messageFile, cleanMessage(withTrailer(input.message, input.requester, input.provenance, more)));
    const bot = DOCKHAND_BOT;
    const sign = signingArgs(input.signer);
    try {
      headSha = (await work.raw(['-c', `user.name=${bot.name}`, '-c', `user.email=${bot.email}`, ...sign.config, 'commit-tree', ...sign.flag, tree, '-p', input.parentSha, '-F', messageFile])).trim();
    } catch (error) {
      throw gitFailure(input.signer ? 'signing the follow-up commit with the server\'s key (git runs ssh-keygen: Debian\'s openssh-client)' : 'making the follow-up commit', error, secrets);
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }

  let refusal: unknown;
  try {
    // No `+` and no --force: the remote takes it only as a fast-forward.
    const output = await remote.raw(['push', '--porcelain', '--no-verify', input.remoteUrl, `${headSha}:${ref}`]);
    note(output.split('\n').filter((line) => line.includes('\t')).join('\n'));
    const upToDate = output.split('\n').some((line) => line.startsWith('=\t'));
    return { headSha, commit: true, pushed: !upToDate, output: log.join('\n') };
  } catch (error) {
    refusal = error;
  }
  // Refused: this round's commit already there (built differently before a crash), or the branch moved.
  const listing = (await tryRaw(remote, ['ls-remote', input.remoteUrl, ref])) ?? '';
  const remoteSha = listing.trim().split(/\s+/)[0];
  if (remoteSha) {
    await tryRaw(remote, ['fetch', '--no-tags', '--quiet', input.remoteUrl, `+${ref}:refs/dockhand/remote/${input.branch}`]);
    const [remoteTree, remoteParent] = (await tryRaw(clone, ['rev-parse', `${remoteSha}^{tree}`, `${remoteSha}^`]))?.split('\n') ?? [];
    if (remoteTree === tree && remoteParent === input.parentSha) {
      note(`${input.branch} already holds this round's change at ${remoteSha}; nothing pushed`);
      return { headSha: remoteSha, commit: true, pushed: false, output: log.join('\n') };
    }
  }
  throw gitFailure(`pushing the follow-up commit on ${input.branch}: the branch is at ${remoteSha ?? 'nothing'}, not at the PR's last pushed head ${input.parentSha} (someone pushed to it); nothing was overwritten`, refusal, secrets, 'conflict');
}
