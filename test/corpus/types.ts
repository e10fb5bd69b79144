/**
 * What a corpus repository is: where its sources come from, what the build script adds only where
 * upstream's own repository has it and the package dropped it (never to fit the product: no
 * lockfile, .nvmrc, packageManager or test override of the build's own), and the planted bug with
 * its bug report. The build
 * script (`scripts/corpus/build.ts`) turns each into a git repository; the cassette generator
 * (`scripts/corpus/cassettes.ts`) turns each bug into an oracle and a null cassette.
 */

export type CorpusSource =
  /** `npm pack <package>@<version>`: the tarball's `package/` folder. */
  | { kind: 'npm'; package: string; version: string }
  /** `apt-get source <package>=<version>` (isolated apt lists, deb-src): the upstream orig tarball. */
  | { kind: 'debian-source'; package: string; version: string }
  /** `apt-get download <package>=<version>`: files of the binary package under `from`, copied to `to`. */
  | { kind: 'debian-binary'; package: string; version: string; from: string; to: string }
  /** A workspace monorepo: each member obtained as above and placed under `dir`. */
  | { kind: 'workspace'; members: { dir: string; source: Exclude<CorpusSource, { kind: 'workspace' }> }[] };

export type LockfileKind = 'npm' | 'pnpm' | 'yarn' | 'yarn-berry' | 'none';
export type RunnerName = 'vitest' | 'jest' | 'mocha' | 'tape' | 'ava' | 'node:test' | 'pytest';

export interface PlantedBug {
  /** File the mutation is in (repository-relative). */
  file: string;
  /** The correct text (must occur exactly once in the file). */
  correct: string;
  /** What the mutation puts in its place. */
  buggy: string;
  /** Commit message of the change that introduced the bug (the base commit). */
  commitMessage: string;
  /** A test's name (or a line) that the test command prints only when the bug is present. */
  failingTest: string;
  /**
   * The test that reproduces the bug, as a bug report names it (the ticket text ends with it):
   * the file, and the test's name when it is short. The server holds a failing test the ticket
   * names as the ticket's to fix, not as a pre-existing failure.
   */
  reproducer: { file: string; test?: string };
  /** First line the oracle reads from, when the bug is past read_file's first 400 lines. */
  readFrom?: number;
  /** What a model would search for first, and where. */
  search: { pattern: string; path: string };
  ticket: { title: string; body: string };
  /** The oracle's finish summary. */
  summary: string;
}

export interface CorpusRepo {
  /** Repository name on the forge (and the cassette sessions' prefix). */
  id: string;
  /** One line: what this repository adds to the corpus. */
  covers: string;
  source: CorpusSource;
  runner: RunnerName;
  /** The lockfile the repository has (upstream's own, or `generatedLockfile`), `none` for none. */
  lockfile: LockfileKind;
  /**
   * Set only where upstream's own repository keeps a lockfile the package does not ship: the build
   * makes it with `packageManager` and commits it (the reason, in `adjustments`). Otherwise the
   * import commit has exactly the lockfile the sources have, if any.
   */
  generatedLockfile?: boolean;
  /** The package manager the HOST verification installs with (`pnpm@9.15.9`); never written into the repository. */
  packageManager?: string;
  /** The Node major the HOST verification runs on; never written into the repository (no .nvmrc, no engines). */
  node?: '18' | '20' | '22';
  defaultBranch: string;
  /** What the build runs on the host to verify the planted bug (the tests of the repository's own test command). */
  test: string;
  /** Edits to package.json: scripts/fields set (null deletes) and devDependencies added. */
  packageJson?: { scripts?: Record<string, string | null>; set?: Record<string, unknown>; devDependencies?: Record<string, string>; removeDevDependencies?: string[] };
  /** Files written into the checkout (path → text). */
  files?: Record<string, string>;
  /** Test files removed because they need tooling the source does not ship (regex on imports). */
  pruneTestsImporting?: { glob: RegExp; keep: RegExp };
  /** What was changed from the source, for the manifest (each line a change, with the upstream file it restores). */
  adjustments: string[];
  bug: PlantedBug;
  /** Small enough for the CI check (install + suite well under a minute in gVisor). */
  small?: boolean;
  /** The oracle's first test run: the whole suite (default) or the selection only (slow suites). */
  redRun?: 'full' | 'selected';
}
