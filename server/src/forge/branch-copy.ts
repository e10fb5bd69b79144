/**
 * Copying a source's branches into a forge repository, one fetch for all of them, and where that
 * fetch fails, branch by branch: a source whose history lacks objects (a partial clone, e.g.
 * `git clone --filter=blob:limit=…`, whose promisor pack leaves out big blobs of a `gh-pages`
 * branch) makes git's upload-pack die for the whole fetch ("fetch-pack: invalid index-pack
 * output"), although most branches are complete. The complete ones are copied; the others are
 * answered as skipped, with git's reason, so the caller can say which and why.
 */
import { GitCommandError } from '../git-child';

/** `from` (a ref prefix at the source, ending in `/`) copied to `to` (a prefix here). */
export interface BranchMapping {
  from: string;
  to: string;
}

export interface SkippedBranch {
  ref: string;
  reason: string;
}

type Run = (args: string[], what: string) => Promise<{ stdout: Buffer }>;

/**
 * Fetches every ref under each mapping's `from` into its `to` (forced), `extra` flags added
 * (e.g. `--prune`). Answers the refs it could not copy; throws git's own error when none could
 * be copied (the source is not readable at all).
 */
export async function copyBranches(run: Run, source: string, mappings: BranchMapping[], what: string, extra: string[] = []): Promise<SkippedBranch[]> {
  const refspecs = mappings.map(({ from, to }) => `+${from}*:${to}*`);
  try {
    await run(['fetch', '--quiet', '--no-tags', ...extra, '--', source, ...refspecs], what);
    return [];
  } catch (whole) {
    const listing = (await run(['ls-remote', '--', source], `listing the branches of ${source}`).catch(() => undefined))?.stdout.toString();
    if (listing === undefined) throw whole;
    const refs = listing
      .split('\n')
      .map((line) => line.split('\t')[1] ?? '')
      .filter((ref) => ref && !ref.endsWith('/HEAD') && mappings.some(({ from }) => ref.startsWith(from)));
    const skipped: SkippedBranch[] = [];
    for (const ref of refs) {
      const mapping = mappings.find(({ from }) => ref.startsWith(from));
      if (!mapping) continue;
      const target = `${mapping.to}${ref.slice(mapping.from.length)}`;
      await run(['fetch', '--quiet', '--no-tags', '--', source, `+${ref}:${target}`], `copying ${ref} of ${source}`).catch((error: unknown) => {
        skipped.push({ ref, reason: reasonOf(error) });
      });
    }
    if (refs.length === 0 || skipped.length === refs.length) throw whole;
    return skipped;
  }
}

/** Git's words for a failed fetch, with the cause a missing object usually has. */
function reasonOf(error: unknown): string {
  const text = error instanceof GitCommandError ? `${error.message}\n${error.stderr}` : error instanceof Error ? error.message : String(error);
  const missing = /repository corruption|invalid index-pack output|missing (blob|tree|commit)|unable to read|did not send all necessary objects/i.test(text);
  const said = text.split('\n').map((line) => line.trim()).filter(Boolean).slice(0, 2).join('; ');
  return missing ? `the source lacks objects of this branch's history (a partial or damaged clone: git fsck there names them): ${said}` : said;
}

/** One line naming the skipped refs, for a log or a message. */
export function skippedSummary(source: string, skipped: SkippedBranch[]): string {
  const names = skipped.map(({ ref }) => ref.replace(/^refs\/(heads|remotes\/origin)\//, '')).join(', ');
  return `not copied from ${source}: ${names} (${skipped[0]?.reason ?? ''}); fetch the missing objects there (git fetch --refetch) and register it again to copy them`;
}
