/**
 * Copying a source's branches into a forge repository at any size: the refs named first (the
 * default branch) each in a fetch of its own, then the others in batches, every fetch incremental
 * (git negotiates with what the repository already has, so a batch moves only what the ones before
 * it did not) and each kept as soon as it completes. A ref the repository already holds at the
 * source's commit is not fetched again, so a copy that was stopped continues where it stopped.
 *
 * Where a batch fails (not a stall), its refs are copied one by one: a source whose history lacks
 * objects (a partial clone, e.g. `git clone --filter=blob:limit=…`, whose promisor pack leaves out
 * big blobs of a `gh-pages` branch) makes git's upload-pack die for the whole fetch ("fetch-pack:
 * invalid index-pack output"), although most branches are complete. The complete ones are copied;
 * the others are answered as skipped, with the cause, so the caller can say which and why. A
 * fetch stopped for no progress (git-child.ts) ends the copy at once: the source stopped sending,
 * and another fetch would meet the same.
 */
import { GitCommandError, isNoProgress } from '../git-child';
import { DockhandError } from '../errors';

/** `from` (a ref prefix at the source, ending in `/`) copied to `to` (a prefix here). */
export interface BranchMapping {
  from: string;
  to: string;
}

export interface SkippedBranch {
  ref: string;
  reason: string;
  /** The source's history lacks objects of this ref (a partial or damaged clone). */
  missingObjects: boolean;
}

/** Where a copy is: which refs are done of how many, and what the fetch running now is for. */
export interface CopyProgress {
  stage: 'first' | 'branches';
  refsDone: number;
  refsTotal: number;
  /** The refs of the fetch running now (the first one, or "refs 500-999"). */
  current: string;
}

/**
 * Runs git in the repository. `transfer` marks a fetch: it runs with an inactivity limit and
 * reports progress (the caller's choice); other calls keep a short total limit.
 */
export type Run = (args: string[], what: string, transfer?: boolean) => Promise<{ stdout: Buffer }>;

export interface CopyOptions {
  /** The source's `ls-remote` output when the caller has just read it (one call fewer). */
  listing?: string;
  /** The repository has no ref yet (just made): nothing to compare with. */
  empty?: boolean;
  /** Refs at the source (e.g. `refs/heads/main`) copied first, each in its own fetch. */
  first?: string[];
  /** Only these refs at the source (a task's branch); default every ref under the mappings. */
  only?: string[];
  /** Delete refs under each `to` that the source no longer has (a refresh). */
  prune?: boolean;
  /** Refs per fetch after the first ones. */
  batchSize?: number;
  onProgress?: (progress: CopyProgress) => void;
  /** Called once the `first` refs are copied (or found here), before the others are fetched. */
  afterFirst?: (skipped: SkippedBranch[]) => Promise<void>;
}

/** Refs per fetch: one command line, one negotiation; each batch is kept when it completes. */
export const BATCH_SIZE = 500;

/**
 * Fetches the refs under each mapping's `from` into its `to` (forced). Answers the refs it could
 * not copy; throws git's own error when none could be copied (the source is not readable at all),
 * and the no-progress error of a stalled fetch.
 */
export async function copyBranches(run: Run, source: string, mappings: BranchMapping[], what: string, options: CopyOptions = {}): Promise<SkippedBranch[]> {
  const listing = options.listing ?? (await run(['ls-remote', '--', source, ...mappings.map(({ from }) => `${from}*`)], `listing the branches of ${source}`)).stdout.toString();
  const wanted = new Map<string, { target: string; sha: string }>();
  for (const line of listing.split('\n')) {
    const [sha = '', ref = ''] = line.split('\t');
    if (!sha || !ref || ref.endsWith('/HEAD')) continue;
    if (options.only && !options.only.includes(ref)) continue;
    const mapping = mappings.find(({ from }) => ref.startsWith(from));
    if (mapping && !wanted.has(ref)) wanted.set(ref, { target: `${mapping.to}${ref.slice(mapping.from.length)}`, sha });
  }
  const here = options.empty ? new Map<string, string>() : await localRefs(run, mappings.map(({ to }) => to));
  if (options.prune && !options.only) await pruneGone(run, here, new Set([...wanted.values()].map(({ target }) => target)), mappings);
  // A ref already at the source's commit is done (a copy stopped before, or a refresh with nothing new).
  const todo = [...wanted].filter(([, { target, sha }]) => here.get(target) !== sha).map(([ref]) => ref);
  const first = (options.first ?? []).filter((ref) => todo.includes(ref));
  const rest = todo.filter((ref) => !first.includes(ref));
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const batches = [...first.map((ref) => [ref]), ...chunks(rest, batchSize)];
  const skipped: SkippedBranch[] = [];
  let done = wanted.size - todo.length;
  for (const [index, batch] of batches.entries()) {
    if (index === first.length) await options.afterFirst?.(skipped);
    const stage = index < first.length ? 'first' : 'branches';
    const current = batch.length === 1 ? batch[0] ?? '' : `${batch.length} refs (${done + 1}-${done + batch.length} of ${wanted.size})`;
    options.onProgress?.({ stage, refsDone: done, refsTotal: wanted.size, current });
    const refspecs = batch.map((ref) => `+${ref}:${wanted.get(ref)?.target ?? ref}`);
    try {
      await run(['fetch', '--progress', '--no-tags', '--no-write-fetch-head', '--', source, ...refspecs], batch.length === 1 ? `copying ${batch[0]} of ${source}` : `${what} (${current})`, true);
    } catch (error) {
      if (isNoProgress(error) || batch.length === 1 || !(error instanceof GitCommandError)) {
        if (batch.length === 1 && error instanceof GitCommandError) skipped.push(skip(batch[0] ?? '', error));
        else throw error;
      } else {
        for (const ref of batch) {
          await run(['fetch', '--progress', '--no-tags', '--no-write-fetch-head', '--', source, `+${ref}:${wanted.get(ref)?.target ?? ref}`], `copying ${ref} of ${source}`, true).catch((one: unknown) => {
            if (!(one instanceof GitCommandError)) throw one;
            skipped.push(skip(ref, one));
          });
        }
      }
    }
    done += batch.length;
  }
  if (batches.length <= first.length) await options.afterFirst?.(skipped);
  options.onProgress?.({ stage: 'branches', refsDone: done, refsTotal: wanted.size, current: '' });
  if (todo.length > 0 && skipped.length === todo.length && here.size === 0) {
    throw new GitCommandError(`${what}: ${skipped[0]?.reason ?? 'no branch could be copied'}`, skipped.map(({ reason }) => reason).join('\n'));
  }
  return skipped;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

async function localRefs(run: Run, prefixes: string[]): Promise<Map<string, string>> {
  const listing = (await run(['for-each-ref', '--format=%(objectname) %(refname)', ...prefixes], 'listing the copied branches')).stdout.toString();
  const refs = new Map<string, string>();
  for (const line of listing.split('\n')) {
    const [sha = '', ref = ''] = line.split(' ');
    if (sha && ref) refs.set(ref, sha);
  }
  return refs;
}

/** Deletes the refs under the mappings' `to` that the source no longer has (what `fetch --prune` did). */
async function pruneGone(run: Run, here: Map<string, string>, kept: Set<string>, mappings: BranchMapping[]): Promise<void> {
  // refs/heads/ of the forge holds the tasks' branches too: only the source's own namespaces are pruned.
  const prunable = mappings.filter(({ to }) => to !== 'refs/heads/').map(({ to }) => to);
  const gone = [...here.keys()].filter((ref) => prunable.some((prefix) => ref.startsWith(prefix)) && !kept.has(ref));
  for (const ref of gone) {
    await run(['update-ref', '-d', ref], `removing ${ref}`).catch(() => undefined);
    here.delete(ref);
  }
}

/** A ref that could not be copied, with the cause in the one wording each cause has. */
function skip(ref: string, error: GitCommandError): SkippedBranch {
  const text = `${error.message}\n${error.stderr}`;
  const missingObjects = /repository corruption|invalid index-pack output|missing (blob|tree|commit)|unable to read|did not send all necessary objects|promisor/i.test(text);
  const said = text.split('\n').map((line) => line.trim()).filter(Boolean).slice(0, 2).join('; ');
  return { ref, missingObjects, reason: missingObjects ? `${MISSING_OBJECTS}: ${said}` : said };
}

/** The one wording of a source whose history lacks objects. */
export const MISSING_OBJECTS = "the source lacks objects of this branch's history (a partial or damaged clone: git fsck there names them)";

/** One line naming the skipped refs, for a log or a message. */
export function skippedSummary(source: string, skipped: SkippedBranch[]): string {
  const names = skipped.map(({ ref }) => ref.replace(/^refs\/(heads|remotes\/origin)\//, '')).join(', ');
  const missing = skipped.some(({ missingObjects }) => missingObjects);
  return `not copied from ${source}: ${names} (${skipped[0]?.reason ?? ''}); ${missing ? 'fetch the missing objects there (git fetch --refetch) and register it again to copy them' : 'register it again to copy them'}`;
}

/** The error of a default branch that could not be copied: its cause, and what to do for that cause. */
export function lostDefaultBranch(source: string, branch: string, lost: SkippedBranch): DockhandError {
  return new DockhandError('bad_request', `source: the default branch ${branch} of ${source} could not be copied: ${lost.reason}`, {
    field: 'source',
    hint: lost.missingObjects
      ? `fetch the missing objects in ${source} (git -C ${source} fetch --refetch, or clone it again without --filter/--depth) and register it again`
      : `check that git -C ${source} log ${branch} works there, then register it again`,
  });
}
