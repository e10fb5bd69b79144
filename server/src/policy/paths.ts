import picomatch from 'picomatch';

/**
 * Path classes the policy cares about. Globs are picomatch globs over repo-relative paths with
 * dot-files included. The lists say what they cover; anything not listed is ordinary code.
 */

/** Files that define what CI runs (and so what secrets it exposes): never edited by the agent. */
export const CI_CONFIG_GLOBS: readonly string[] = [
  '.github/workflows/**',
  '.github/actions/**', // composite actions run inside workflows
  '.gitlab-ci.yml',
  '.gitlab-ci.yaml',
  '.gitlab/ci/**',
  '**/Jenkinsfile',
  '**/*.jenkinsfile',
  '.circleci/**',
  'azure-pipelines.yml',
  'azure-pipelines.yaml',
  'azure-pipelines/**',
  '.azure-pipelines/**',
  '.buildkite/**',
  '.travis.yml',
  'bitbucket-pipelines.yml',
  '.drone.yml',
  '.woodpecker.yml',
  '.woodpecker/**',
  'appveyor.yml',
  '.appveyor.yml',
  'cloudbuild.yaml',
  'cloudbuild.yml',
  'buildspec.yml',
  '.teamcity/**',
];

/**
 * Protected by default: infrastructure as code, review ownership and Dockhand's own policy.
 *
 * Dockerfiles are NOT protected by default: they are application build recipes that tickets
 * legitimately touch (add a system package, bump a runtime), and by themselves deploy nothing.
 * A repo that deploys straight from its Dockerfile adds `**\/Dockerfile` to `protectedPaths`.
 */
export const DEFAULT_PROTECTED_GLOBS: readonly string[] = [
  '.dockhand/**',
  // Attributes decide what git shows as binary and which drivers run: a reviewed change.
  '**/.gitattributes',
  '**/*.tf',
  '**/*.tfvars',
  '**/*.tf.json',
  '**/terragrunt.hcl',
  'terraform/**',
  'infra/**',
  'helm/**',
  'charts/**',
  'k8s/**',
  'kubernetes/**',
  'CODEOWNERS',
  '.github/CODEOWNERS',
  'docs/CODEOWNERS',
];

/**
 * Test conventions of JS/TS, Python, Go, Java/Kotlin (and Ruby's spec/), plus the files that
 * configure how tests run: editing those can switch tests off as surely as editing a test.
 */
export const TEST_GLOBS: readonly string[] = [
  // directories
  '**/__tests__/**',
  '**/__mocks__/**',
  '**/__snapshots__/**',
  '**/test/**',
  '**/tests/**',
  '**/spec/**',
  '**/e2e/**',
  '**/testdata/**',
  '**/src/test/**',
  // JS / TS
  '**/*.{test,spec}.{js,jsx,ts,tsx,mjs,cjs,mts,cts}',
  '**/*.snap',
  // Python
  '**/test_*.py',
  '**/*_test.py',
  // Go
  '**/*_test.go',
  // Java / Kotlin
  '**/*{Test,Tests,IT,TestCase}.{java,kt}',
  // Ruby
  '**/*_spec.rb',
];

export const TEST_CONFIG_GLOBS: readonly string[] = [
  '**/conftest.py',
  '**/pytest.ini',
  '**/tox.ini',
  '**/{jest,vitest,karma,playwright,cypress}.config.{js,ts,mjs,cjs,mts,cts,json}',
  '**/vitest.workspace.{js,ts,mjs}',
  '**/.mocharc{,.js,.cjs,.json,.yml,.yaml}',
  '**/jest.setup.{js,ts}',
];

export type PathMatcher = (path: string) => boolean;

export function globMatcher(globs: readonly string[]): PathMatcher {
  if (globs.length === 0) return () => false;
  const match = picomatch([...globs], { dot: true });
  return (path) => match(path);
}

export const isCiConfig: PathMatcher = globMatcher(CI_CONFIG_GLOBS);
export const isTestFile: PathMatcher = globMatcher(TEST_GLOBS);
export const isTestConfig: PathMatcher = globMatcher(TEST_CONFIG_GLOBS);

/** Lockfiles: their lines do not count towards the size cap (one dependency bump rewrites hundreds). */
export const isLockfile: PathMatcher = globMatcher([
  '**/{package-lock.json,npm-shrinkwrap.json,yarn.lock,pnpm-lock.yaml,deno.lock,bun.lock}',
  '**/{Cargo.lock,go.sum,poetry.lock,Pipfile.lock,uv.lock,composer.lock,Gemfile.lock,gradle.lockfile}',
]);
