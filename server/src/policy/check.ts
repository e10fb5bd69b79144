import type { EventPayload, NewEvent } from '@dockhand/protocol';
import { parseUnifiedDiff, type ChangedFile } from './diff';
import { globMatcher, isCiConfig, isLockfile, isTestConfig, isTestFile, DEFAULT_PROTECTED_GLOBS } from './paths';
import { DEFAULT_REPO_POLICY, type RepoPolicy } from './repo-policy';
import { archiveTexts } from './secret-decode';
import { scanSecrets, scanText } from './secrets';
import { MAX_DIFF_BYTES, oversizeMessage, splitBinaryFiles, type BinaryFile } from './binary-files';
import { supplyChainViolations } from './supply-chain';
import { maskSecrets } from './mask';
import { STORED_SECRET_RULE, storedSecretInDiff } from './known-secrets';
import { escapeInvisible, invisibleCharacters } from './unicode';

/**
 * The policy gate: pure checks over the final diff, outside the model. Any violation blocks the
 * push; only a repo owner's override (`override.ts`) lets a blocked diff through.
 *
 * Rules (the `rule` field of a violation):
 * - `secret:<gitleaks id>` / `secret:high-entropy-string` / `secret:private-key-file`
 * - `ci-config`        edits to CI definitions
 * - `protected-path`   built-in infra-as-code globs plus the repo's `protectedPaths`
 * - `diff-size:lines`, `diff-size:files`   the size caps; `diff-size:bytes` a diff too big to read at all
 * - `test-edit`        changing existing tests or test configuration when the ticket did not ask
 * - `diff-unparseable` a diff the gate cannot read (fails closed)
 * - `supply-chain:<kind>` install scripts, dependency sources, registry config, new dependencies
 * - `trojan-source`    bidi controls and zero-width characters in added lines or paths
 */

export type PolicyStage = 'review' | 'push';
export type PolicyCheckResult = EventPayload<'policy.checked'>;
export type PolicyViolation = PolicyCheckResult['violations'][number];

export interface PolicyCheckInput {
  /** Unified diff of the change against the base SHA (`git diff` format). */
  diff: string;
  /** The repo's policy at the base SHA; defaults when the repo has none. */
  policy?: RepoPolicy;
  /** The ticket explicitly allows changing tests. */
  allowTestEdits: boolean;
  stage: PolicyStage;
  /** Values the server holds (repository secrets, its own tokens): added in any form, they block (`known-secrets.ts`). */
  known?: readonly (string | undefined)[];
}

export interface DiffStats {
  changedFiles: number;
  /** Added plus removed lines, lockfiles excluded. */
  changedLines: number;
}

const SECRET_FILE = globMatcher(['**/*.{p12,pfx}', '**/id_{rsa,dsa,ecdsa,ed25519}']);

export function diffStats(files: ChangedFile[]): DiffStats {
  let changedLines = 0;
  for (const file of files) {
    if (!isLockfile(file.path)) changedLines += file.added.length + file.removedCount;
  }
  return { changedFiles: files.length, changedLines };
}

function pathsOf(file: ChangedFile): string[] {
  return file.oldPath === undefined ? [file.path] : [file.path, file.oldPath];
}

function describeChange(file: ChangedFile): string {
  return file.change === 'renamed' ? `renamed from ${file.oldPath ?? '?'}` : file.change;
}

function secretViolations(file: ChangedFile): PolicyViolation[] {
  const violations: PolicyViolation[] = [];
  if (file.change !== 'deleted' && SECRET_FILE(file.path)) {
    violations.push({
      rule: 'secret:private-key-file',
      path: file.path,
      message: `${file.path} looks like a key store or private key file; keys do not belong in the repository`,
    });
  }
  for (const finding of scanSecrets(file.path, file.added)) {
    violations.push({
      rule: `secret:${finding.rule}`,
      path: file.path,
      line: finding.line,
      excerpt: finding.excerpt,
      message: `${finding.description} added at ${file.path}:${finding.line}; remove it and use a secret store`,
    });
  }
  return violations;
}

/** Bidi controls and zero-width characters (Trojan Source) in the lines a file adds, or in its path. */
function trojanSourceViolations(file: ChangedFile): PolicyViolation[] {
  const violations: PolicyViolation[] = [];
  for (const found of invisibleCharacters(file.path).slice(0, 1)) {
    violations.push({ rule: 'trojan-source', path: file.path, message: `the path ${JSON.stringify(file.path)} contains ${found.name}` });
  }
  for (const line of file.added) {
    const found = invisibleCharacters(line.text, line.line);
    // A byte-order mark opening the file is allowed; anywhere else it hides in the text.
    const first = found[0];
    if (!first) continue;
    violations.push({
      rule: 'trojan-source',
      path: file.path,
      line: line.line,
      excerpt: escapeForExcerpt(line.text),
      message: `${first.name} at ${file.path}:${line.line}${found.length > 1 ? ` (and ${found.length - 1} more on the line)` : ''}; code must read the way it runs (CVE-2021-42574)`,
    });
  }
  return violations;
}

/** The line as an excerpt: invisible characters written out, any secret on it masked. */
function escapeForExcerpt(text: string): string {
  const visible = maskSecrets(escapeInvisible(text)).trim();
  return visible.length > 160 ? `${visible.slice(0, 159)}…` : visible;
}

function unreadable(stage: PolicyStage, why: string): PolicyCheckResult & { stats: DiffStats } {
  return {
    ok: false,
    stage,
    violations: [{ rule: 'diff-unparseable', path: '', message: `the diff cannot be parsed (${why}); nothing is pushed` }],
    stats: { changedFiles: 0, changedLines: 0 },
  };
}

/** `"test"`, `"pretest"`, `"test:unit"` … in a package.json: the command the suite is judged by. */
const TEST_SCRIPT = /^\s*"(?<name>(?:pre|post)?test(?::[\w:.-]+)?)"\s*:/;

/**
 * An existing test script of a package.json changed or removed (its old line is among the removed
 * ones): that can switch the suite off. A test script added where there was none hides nothing.
 */
function testScriptChange(file: ChangedFile): { name: string; line: number } | undefined {
  if (!/(?:^|\/)package\.json$/.test(file.path)) return undefined;
  for (const removed of file.removed) {
    const name = TEST_SCRIPT.exec(removed.text)?.groups?.['name'];
    if (!name) continue;
    const replacement = file.added.find((line) => TEST_SCRIPT.exec(line.text)?.groups?.['name'] === name);
    return { name, line: replacement?.line ?? removed.line };
  }
  return undefined;
}

/** Secrets in the text members of an archive (gzip file, zip member), reported at the archive's path. */
function archiveViolations(file: BinaryFile): PolicyViolation[] {
  if (!file.content) return [];
  const violations: PolicyViolation[] = [];
  for (const member of archiveTexts(file.content, file.path)) {
    for (const finding of scanText(member.text, member.name.replace(/!$/, '').replace(/\.gz!$/, ''))) {
      violations.push({
        rule: `secret:${finding.rule}`,
        path: file.path,
        line: finding.line,
        excerpt: finding.excerpt,
        message: `${finding.description} inside ${member.name} (line ${finding.line} of the unpacked file); remove it and use a secret store`,
      });
    }
  }
  return violations;
}

/** Text git was told to call binary (`*.js binary` in a .gitattributes): git's own test, no NUL in the first 8000 bytes. */
const MAX_TEXT_AS_BINARY = 8 * 1024 * 1024;
function isText(content: Buffer): boolean {
  return content.length <= MAX_TEXT_AS_BINARY && !content.subarray(0, 8000).includes(0);
}

/**
 * A binary file as the policy sees it. One whose content is text (attributes made git write it as
 * a binary patch) is read as text: every line of it counts as added, so no attribute hides it.
 */
function binaryChange(file: BinaryFile): ChangedFile {
  const added = file.content && isText(file.content) ? file.content.toString('utf8').split('\n').map((text, index) => ({ line: index + 1, text })) : [];
  return { path: file.path, change: file.change, binary: added.length === 0, added, removedCount: 0, removed: [], ...(file.oldPath !== undefined ? { oldPath: file.oldPath } : {}) };
}

export function checkPolicy(input: PolicyCheckInput): PolicyCheckResult & { stats: DiffStats } {
  const policy = input.policy ?? DEFAULT_REPO_POLICY;
  // Bounded before anything is read: a diff over the cap is blocked by its size alone.
  if (input.diff.length > MAX_DIFF_BYTES) {
    return { ok: false, stage: input.stage, violations: [{ rule: 'diff-size:bytes', path: '', message: oversizeMessage(input.diff) }], stats: { changedFiles: 0, changedLines: 0 } };
  }
  // Fail closed: a diff the gate cannot read is a diff it cannot vouch for.
  let files: ChangedFile[];
  let binaries: BinaryFile[];
  try {
    const split = splitBinaryFiles(input.diff);
    binaries = split.binaries;
    files = [...parseUnifiedDiff(split.text), ...binaries.map(binaryChange)];
  } catch (error) {
    return unreadable(input.stage, error instanceof Error ? error.message : String(error));
  }
  if (files.length === 0 && input.diff.trim() !== '') return unreadable(input.stage, 'no file headers found');
  const isProtected = globMatcher([...DEFAULT_PROTECTED_GLOBS, ...policy.protectedPaths]);
  const violations: PolicyViolation[] = [];

  for (const binary of binaries) violations.push(...archiveViolations(binary));
  for (const found of storedSecretInDiff(files, input.known ?? [])) {
    violations.push({ rule: STORED_SECRET_RULE, path: found.path, line: found.line, message: `a value this server holds as a secret (raw, URL-encoded or base64) is added at ${found.path}:${found.line}; remove it` });
  }
  for (const file of files) {
    violations.push(...secretViolations(file));
    violations.push(...trojanSourceViolations(file));
    violations.push(...supplyChainViolations(file, policy));
    const paths = pathsOf(file);
    const ci = paths.find(isCiConfig);
    if (ci !== undefined) {
      violations.push({
        rule: 'ci-config',
        path: ci,
        message: `${ci} is CI configuration (${describeChange(file)}); Dockhand never changes CI definitions`,
      });
    }
    const guarded = paths.find(isProtected);
    if (guarded !== undefined) {
      violations.push({
        rule: 'protected-path',
        path: guarded,
        message: `${guarded} is a protected path (${describeChange(file)}); a repo owner must make this change`,
      });
    }
    if (!input.allowTestEdits && ci === undefined) {
      const testPath = paths.find((path) => isTestConfig(path) || (file.change !== 'added' && isTestFile(path)));
      if (testPath !== undefined) {
        violations.push({
          rule: 'test-edit',
          path: testPath,
          message: `${testPath} is an existing test or test configuration (${describeChange(file)}); the ticket does not allow test edits (new test files are allowed)`,
        });
      }
      const script = testScriptChange(file);
      if (testPath === undefined && script !== undefined) {
        violations.push({
          rule: 'test-edit',
          path: file.path,
          line: script.line,
          message: `the existing "${script.name}" script in ${file.path} is changed or removed, which changes how the tests run (\`|| true\` would hide every failure); the ticket does not allow test edits`,
        });
      }
    }
  }

  const stats = diffStats(files);
  if (stats.changedLines > policy.maxChangedLines) {
    violations.push({
      rule: 'diff-size:lines',
      path: '',
      message: `the diff changes ${stats.changedLines} lines; the cap is ${policy.maxChangedLines} (lockfiles not counted)`,
    });
  }
  if (stats.changedFiles > policy.maxChangedFiles) {
    violations.push({
      rule: 'diff-size:files',
      path: '',
      message: `the diff changes ${stats.changedFiles} files; the cap is ${policy.maxChangedFiles}`,
    });
  }

  return { ok: violations.length === 0, stage: input.stage, violations, stats };
}

/**
 * The `policy.checked` event for a result (stats stay out of the log). An overridden result keeps
 * its violations and `ok: false`, and says who overrode them.
 */
export function policyCheckedEvent(result: PolicyCheckResult): NewEvent {
  const override = result.overridden ? { overridden: true, ...(result.overriddenBy ? { overriddenBy: result.overriddenBy } : {}) } : {};
  return {
    type: 'policy.checked',
    data: { ok: result.ok, stage: result.stage, violations: result.violations, ...override },
  };
}
