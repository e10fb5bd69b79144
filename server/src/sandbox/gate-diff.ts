/**
 * The last step of a workspace's diff (`WORKSPACE_DIFF_SCRIPT` in install-made.ts, Sandbox.diff): with the workspace's tree
 * in a throwaway index (`GIT_INDEX_FILE`) and the base SHA in `$0`, print the diff the gates read.
 *
 * Nothing the agent wrote may change how that diff looks. Git attributes decide what git calls
 * binary (`*.js binary`, `package.json -diff` turned a token and a postinstall into opaque binary
 * patches) and which diff and textconv drivers run. So the two trees are compared in a throwaway
 * git directory that borrows the repository's objects: its index is the base tree and its work
 * tree an empty directory, so attributes come from the base only; no repository, global or
 * system config (the agent's `core.attributesFile`, diff drivers), no `info/attributes`, no
 * external diff, no textconv. `--binary`, so real binary files still round-trip to the push.
 * `--no-renames`: git's default without config detects renames, and a rename would show only its
 * new path; the gates must see a moved test file's old path (a test removed) and the whole text.
 */
export const GATE_DIFF_OF_INDEX = [
  'tree=$(git write-tree)',
  'gate=$(mktemp -d /tmp/.dockhand-gate.XXXXXX)',
  'objects=$(git rev-parse --path-format=absolute --git-path objects)',
  'mkdir -p "$gate/git/objects/info" "$gate/git/refs" "$gate/empty"',
  'echo "$objects" > "$gate/git/objects/info/alternates"',
  'echo "ref: refs/heads/none" > "$gate/git/HEAD"',
  '( export GIT_DIR="$gate/git" GIT_INDEX_FILE="$gate/index" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_ATTR_NOSYSTEM=1',
  '  git read-tree "$0"',
  // Attributes are looked up in the work tree of the current directory: the empty one.
  '  cd "$gate/empty"',
  '  git -c core.attributesFile=/dev/null --work-tree="$gate/empty" diff --binary --no-color --no-ext-diff --no-textconv --no-renames "$0" "$tree" ) || { rm -rf "$gate"; exit 1; }',
  'rm -rf "$gate"',
].join('\n');
