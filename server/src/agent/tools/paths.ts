import { posix } from 'node:path';
import { ToolError } from './types';

/** Where the workspace is mounted inside the sandbox; models often echo it back in paths. */
export const WORKSPACE_ROOT = '/workspace';

/**
 * Turns a path the model gave into a normalised workspace-relative path, or refuses it.
 * The sandbox refuses escapes too (symlinks included); this check gives the model a clear reason
 * before anything runs and keeps paths out of option position in argv (`-` prefixes).
 */
export function toWorkspacePath(input: string, field = 'path'): string {
  if (input.includes('\0')) throw new ToolError(`${field}: contains a NUL byte`);
  let path = input.trim().replace(/\\/g, '/');
  if (path === WORKSPACE_ROOT || path === `${WORKSPACE_ROOT}/`) return '.';
  if (path.startsWith(`${WORKSPACE_ROOT}/`)) path = path.slice(WORKSPACE_ROOT.length + 1);
  if (path.startsWith('/') || path.startsWith('~')) {
    throw new ToolError(
      `${field}: "${input}" is outside the workspace; use a path relative to the repository root (${WORKSPACE_ROOT})`,
    );
  }
  const normalised = posix.normalize(path === '' ? '.' : path);
  if (normalised === '..' || normalised.startsWith('../')) {
    throw new ToolError(`${field}: "${input}" escapes the workspace; stay inside the repository`);
  }
  const trimmed = normalised.replace(/\/+$/, '');
  return trimmed === '' ? '.' : trimmed;
}

/** For argv: a relative path that can never be read as an option. */
export function asArgument(path: string): string {
  return path.startsWith('-') ? `./${path}` : path;
}

const TEST_PATH_PATTERNS: RegExp[] = [
  /(^|\/)(test|tests|__tests__|spec|specs|e2e)\//,
  /\.(test|spec)\.[cm]?[jt]sx?$/,
  /(^|\/)test_[^/]*\.py$/,
  /_test\.(py|go)$/,
  /(^|\/)conftest\.py$/,
  /_spec\.rb$/,
];

/** Conventional test locations across JS/TS, Python, Go and Ruby; the policy layer re-checks the final diff. */
export function isTestPath(path: string): boolean {
  return TEST_PATH_PATTERNS.some((pattern) => pattern.test(path));
}

const CI_CONFIG_PATTERNS: RegExp[] = [
  /^\.github\/workflows\//,
  /^\.github\/actions\//,
  /^\.gitlab-ci\.yml$/,
  /^\.circleci\//,
  /^\.buildkite\//,
  /^azure-pipelines\.ya?ml$/,
  /^Jenkinsfile$/,
  /^\.travis\.yml$/,
  /^\.ci\//,
];

export function isCiConfigPath(path: string): boolean {
  return CI_CONFIG_PATTERNS.some((pattern) => pattern.test(path));
}
