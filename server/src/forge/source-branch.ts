import { DockhandError } from '../errors';
import { checkGitSource, type GitChildren, type GitRunOptions } from '../git-child';

/*
 * A registered source's default branch: what a registration stores, the local forge's copy points
 * its HEAD at, and a check without a SHA checks. Usually the branch the source's HEAD names. A
 * clone checked out at a commit has a detached HEAD (and may have no local branch at all, only its
 * origin's remote-tracking ones): its origin's HEAD (`refs/remotes/origin/HEAD`) names the branch
 * then, else its branches decide — one branch is that one; of several, main or master. Several
 * without either is refused rather than guessed, and so is a source with no branch at all.
 */

/** Where a clone's origin keeps its branches; the local forge copies from here what the source lacks locally. */
export const ORIGIN_BRANCHES = 'refs/remotes/origin/';

export interface SourceRefs {
  /** What HEAD points at (`refs/heads/x`), when it is symbolic. */
  head?: string;
  /** The commit HEAD is at, when detached. */
  headSha?: string;
  /** What the origin's HEAD points at (`refs/remotes/origin/x`). */
  originHead?: string;
  /** Local branches (names without `refs/heads/`). */
  local: string[];
  /** The origin's remote-tracking branches (names without `refs/remotes/origin/`, HEAD left out). */
  origin: string[];
}

/** `git ls-remote --symref` output as the refs that decide the default branch. */
export function parseSourceRefs(listing: string): SourceRefs {
  const refs: SourceRefs = { local: [], origin: [] };
  for (const line of listing.split('\n')) {
    const symbolic = /^ref: (\S+)\t(\S+)$/.exec(line);
    if (symbolic) {
      if (symbolic[2] === 'HEAD') refs.head = symbolic[1];
      else if (symbolic[2] === `${ORIGIN_BRANCHES}HEAD`) refs.originHead = symbolic[1];
      continue;
    }
    const [sha, name] = line.split('\t');
    if (!sha || !name) continue;
    if (name === 'HEAD') refs.headSha = sha;
    else if (name.startsWith('refs/heads/')) refs.local.push(name.slice('refs/heads/'.length));
    else if (name.startsWith(ORIGIN_BRANCHES) && name !== `${ORIGIN_BRANCHES}HEAD`) refs.origin.push(name.slice(ORIGIN_BRANCHES.length));
  }
  return refs;
}

/**
 * The default branch of a source whose refs are `refs` (see the header). `known` (the branch a
 * registration already stores) wins among several branches when HEAD names none.
 */
export function defaultBranchOf(refs: SourceRefs, source: string, known?: string): string {
  if (refs.head?.startsWith('refs/heads/')) return refs.head.slice('refs/heads/'.length);
  const branches = refs.local.length > 0 ? refs.local : refs.origin;
  const fromOrigin = refs.originHead?.startsWith(ORIGIN_BRANCHES) ? refs.originHead.slice(ORIGIN_BRANCHES.length) : undefined;
  if (fromOrigin && (refs.local.includes(fromOrigin) || refs.origin.includes(fromOrigin))) return fromOrigin;
  if (known && branches.includes(known)) return known;
  if (branches.length === 1 && branches[0]) return branches[0];
  for (const usual of ['main', 'master']) if (branches.includes(usual)) return usual;
  const detached = refs.headSha ? `its HEAD is detached at ${refs.headSha.slice(0, 12)}` : 'its HEAD names no branch';
  if (branches.length === 0) {
    throw new DockhandError('bad_request', `source: ${source} has no branch: ${detached}, and it has no local branch and no ${ORIGIN_BRANCHES}* branch`, {
      field: 'source',
      hint: `give it the branch tasks start from (in the clone: git branch main ${refs.headSha ? refs.headSha.slice(0, 12) : '<commit>'}), then run dockhand repo add again`,
    });
  }
  const shown = branches.slice(0, 10).join(', ') + (branches.length > 10 ? `, … (${branches.length})` : '');
  throw new DockhandError('bad_request', `source: ${source} has several branches and none of them is main or master (${shown}); ${detached}, so which one is the default cannot be told`, {
    field: 'source',
    hint: `in the clone, check out the default branch (git checkout <branch>) or point its origin's HEAD at it (git remote set-head origin <branch>), then run dockhand repo add again`,
  });
}

/** Reads the source's refs (`git ls-remote --symref`, one call) and answers its default branch, or refuses (see `defaultBranchOf`). */
export async function sourceDefaultBranch(
  children: GitChildren,
  source: string,
  options: Pick<GitRunOptions, 'timeoutMs' | 'signal'> & { known?: string } = {},
): Promise<string> {
  return (await readSourceRefs(children, source, options)).branch;
}

/** `sourceDefaultBranch` with the listing it read (a copy of the branches needs the same one). */
export async function readSourceRefs(
  children: GitChildren,
  source: string,
  options: Pick<GitRunOptions, 'timeoutMs' | 'signal'> & { known?: string } = {},
): Promise<{ branch: string; listing: string }> {
  const checked = checkGitSource(source, 'source').source;
  const listing = (await children.run(['ls-remote', '--symref', '--', checked, 'HEAD', 'refs/heads/*', `${ORIGIN_BRANCHES}*`], {
    timeoutMs: options.timeoutMs ?? 60_000,
    what: `reading the branches of ${source}`,
    ...(options.signal ? { signal: options.signal } : {}),
  })).stdout.toString();
  return { branch: defaultBranchOf(parseSourceRefs(listing), source, options.known), listing };
}
