/*
 * What a snapshot's install wrote or rewrote in the workspace (a `prepare` that regenerates a
 * tracked file, tshy rewriting package.json's exports, a build's `dist/` nobody ignores) is part of
 * the environment: never a reason to refuse the repository and never part of a task's diff.
 *
 * The build records it in the image's git (RECORD_INSTALL_MADE_SCRIPT): a commit
 * `refs/dockhand-install/made` whose parent is the snapshot's commit and whose tree is the
 * workspace after the install (so every path the install touched has its post-install blob hash),
 * and the list of those paths in `.git/dockhand-install-made` (added or changed) and
 * `.git/dockhand-install-removed` (deleted), NUL-separated. A workspace's listing (Sandbox.diff,
 * workspaceState, the feedback engine's readWorkspaceChanges) then leaves out each of those paths
 * whose content is still exactly what the install made (INSTALL_MADE_FUNCTION); a path anything
 * else then changed shows its whole change against the base. Without the record (images built
 * before it, or installs that changed nothing) the function prints nothing and runs no process.
 */

import { GATE_DIFF_OF_INDEX } from './gate-diff';

export const INSTALL_MADE_REF = 'refs/dockhand-install/made';
const MADE_LIST = '.git/dockhand-install-made';
const REMOVED_LIST = '.git/dockhand-install-removed';

/**
 * Run after the install in the workspace (bash, as the build's user): when the tree is not clean,
 * records what changed and prints `git diff --raw` of it (mode, blobs before and after, path).
 * A repository the install made inside the workspace (a prepare's `git init` in a build
 * directory: `git status` lists it as `dir/`, and `git add` refuses one without a commit) is the
 * environment's, like node_modules: excluded (`.git/info/exclude`). A git that cannot read the
 * workspace fails the script (its status is not taken for "nothing changed").
 * A copy of the real index keeps stat information, so only the changed files are hashed.
 */
export const RECORD_INSTALL_MADE_SCRIPT = `set -e
git status --porcelain -z --untracked-files=all | tr '\\0' '\\n' | sed -n 's|^?? \\(.*/\\)$|/\\1|p' >> .git/info/exclude
changes=$(git status --porcelain --untracked-files=all)
[ -n "$changes" ] || exit 0
index=$(mktemp /tmp/.dockhand-index.XXXXXX); trap 'rm -f "$index"' EXIT
cp .git/index "$index"
GIT_INDEX_FILE=$index git add -A .
tree=$(GIT_INDEX_FILE=$index git write-tree)
commit=$(git commit-tree "$tree" -p HEAD -m "dockhand: what the install wrote")
git update-ref ${INSTALL_MADE_REF} "$commit"
git diff --name-only -z --no-renames --diff-filter=d HEAD "$commit" > ${MADE_LIST}
git diff --name-only -z --no-renames --diff-filter=D HEAD "$commit" > ${REMOVED_LIST}
git diff --raw --no-renames --abbrev=40 -z HEAD "$commit"`;

/**
 * A bash function, `dockhand_install_made`, run in the workspace: prints (NUL-separated) the
 * recorded paths whose content is still what the install left, the deleted ones that are still
 * absent. Added paths are re-hashed in a throwaway index holding the recorded tree (the others are
 * not read). On any error it prints nothing, so everything shows.
 */
export const INSTALL_MADE_FUNCTION = `dockhand_install_made() {
  [ -e ${MADE_LIST} ] || return 0
  local index changed out
  index=$(mktemp /tmp/.dockhand-index.XXXXXX); changed=$(mktemp /tmp/.dockhand-made.XXXXXX); out=$(mktemp /tmp/.dockhand-made.XXXXXX)
  if {
    if [ -s ${MADE_LIST} ]; then
      GIT_INDEX_FILE=$index git read-tree ${INSTALL_MADE_REF} &&
      GIT_INDEX_FILE=$index GIT_LITERAL_PATHSPECS=1 git add -A --pathspec-from-file=${MADE_LIST} --pathspec-file-nul &&
      GIT_INDEX_FILE=$index git diff --cached --name-only -z --no-renames ${INSTALL_MADE_REF} | LC_ALL=C sort -z > "$changed" &&
      LC_ALL=C sort -z ${MADE_LIST} | LC_ALL=C comm -z -23 - "$changed" > "$out"
    fi
  } 2>/dev/null; then
    if [ -s ${REMOVED_LIST} ]; then
      while IFS= read -r -d '' path; do [ -e "$path" ] || [ -L "$path" ] || printf '%s\\0' "$path"; done < ${REMOVED_LIST} >> "$out"
    fi
    cat "$out"
  fi
  rm -f "$index" "$changed" "$out"
}`;

export interface InstallChange {
  path: string;
  /** `added`, `modified` or `deleted` by the install. */
  change: 'added' | 'modified' | 'deleted';
  /** The blob the install left (absent for a deletion). */
  blob?: string;
}

/** RECORD_INSTALL_MADE_SCRIPT's output (`git diff --raw -z`): `:mode mode blob blob status\0path\0` per path. */
export function readInstallChanges(raw: string): InstallChange[] {
  const parts = raw.split('\0');
  const changes: InstallChange[] = [];
  for (let index = 0; index + 1 < parts.length; index += 2) {
    const meta = (parts[index] ?? '').trim().split(/\s+/);
    const path = parts[index + 1] ?? '';
    if (!meta[0]?.startsWith(':') || path === '') continue;
    const status = meta[4] ?? '';
    const change = status.startsWith('A') ? 'added' : status.startsWith('D') ? 'deleted' : 'modified';
    changes.push({ path, change, ...(change === 'deleted' ? {} : { blob: meta[3] ?? '' }) });
  }
  return changes;
}

/** The install's changes in a few words for a message: the first paths (a directory's files as `dir/`), and how many. */
export function describeInstallChanges(changes: readonly InstallChange[], limit = 6): string {
  const names: string[] = [];
  for (const change of changes) {
    const top = change.change === 'added' && change.path.includes('/') ? `${change.path.split('/')[0]}/` : change.path;
    const name = change.change === 'deleted' ? `${top} (deleted)` : top;
    if (!names.includes(name)) names.push(name);
  }
  const shown = names.slice(0, limit).join(', ');
  const more = names.length > limit ? ` and ${names.length - limit} more` : '';
  return `${shown}${more} (${changes.length} file${changes.length === 1 ? '' : 's'})`;
}

/** Splits a NUL-separated list (dockhand_install_made's output) into a set. */
export function installMadeSet(text: string): Set<string> {
  return new Set(text.split('\0').filter((path) => path !== ''));
}

/** Between `git status -z` and dockhand_install_made's output where one command prints both. */
export const INSTALL_MADE_SEPARATOR = '--install-made--';

/** `git status --porcelain -z --no-renames` entries less the install-made paths, as `XY path` lines. */
export function withoutInstallMade(statusZ: string, made: ReadonlySet<string>): string {
  return statusZ
    .split('\0')
    .filter((entry) => entry.length > 3 && !made.has(entry.slice(3)))
    .join('\n');
}

/**
 * Sandbox.diff's script (bash, base commit as $0): the workspace against the base in a throwaway
 * index (the agent's own index untouched), tracked and untracked files, ignored ones left out, and
 * the install-made paths that still hold what the install made reset to the base. Only a snapshot
 * whose install changed files has the record, so other workspaces pay no extra process. The diff
 * of that index is `GATE_DIFF_OF_INDEX` (gate-diff.ts): no .gitattributes the agent wrote changes it.
 */
export const WORKSPACE_DIFF_SCRIPT =
  `set -e; export GIT_INDEX_FILE=$(mktemp /tmp/.dockhand-index.XXXXXX); trap 'rm -f "$GIT_INDEX_FILE"' EXIT; ${INSTALL_MADE_FUNCTION}\n` +
  'git read-tree "$0"; git add -A .; ' +
  `if [ -e ${MADE_LIST} ]; then made=$(mktemp /tmp/.dockhand-made.XXXXXX); dockhand_install_made > "$made"; ` +
  'if [ -s "$made" ]; then GIT_LITERAL_PATHSPECS=1 git reset -q "$0" --pathspec-from-file="$made" --pathspec-file-nul; fi; rm -f "$made"; fi\n' +
  // The diff as the gates must read it: attributes from the base only, no config, drivers or textconv.
  GATE_DIFF_OF_INDEX;
