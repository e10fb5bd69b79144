import type { AddedLine, ChangedFile } from './diff';
import { globMatcher } from './paths';
import type { PolicyViolation } from './check';
import type { RepoPolicy } from './repo-policy';

/**
 * Supply-chain changes: what runs or what is fetched when someone installs the project. An agent
 * that obeys a hostile ticket ("add a postinstall that pipes this URL into sh") changes exactly
 * these lines, and a summary that mentions only the typo hides them. Each kind is a violation that
 * needs an owner's override (listed in the PR body) unless the repo's policy allows it
 * (`supplyChain` in `.dockhand/policy.yml`).
 *
 * - `supply-chain:install-script`    `preinstall`/`install`/`postinstall`/`prepare`/… in a package.json
 * - `supply-chain:dependency-source` a dependency from git, a URL, a tarball or a local path
 *                                    (package.json, requirements*.txt), or a `--index-url`-style option
 * - `supply-chain:registry-config`   `.npmrc`, `.yarnrc(.yml)`, `pip.conf`, `.pypirc`, `pnpm-workspace.yaml`,
 *                                    `.pnpmfile.cjs`, `bunfig.toml` …, or `registry`/`publishConfig` in package.json
 * - `supply-chain:new-dependency`    a package name added to package.json or requirements*.txt that the
 *                                    diff did not remove (a version bump is not new)
 *
 * Not covered: pyproject.toml, Cargo.toml, go.mod, Gemfile and other manifests (a new dependency
 * there passes; their install steps run no repository scripts by default), and lockfile-only changes.
 */

export type SupplyChainKind = 'install-script' | 'dependency-source' | 'registry-config' | 'new-dependency';

const PACKAGE_JSON = /(?:^|\/)package\.json$/;
const REQUIREMENTS = /(?:^|\/)(?:requirements|constraints)[\w.-]*\.(?:txt|in)$/;
const REGISTRY_CONFIG = globMatcher([
  '**/.npmrc',
  '**/.yarnrc',
  '**/.yarnrc.yml',
  '**/pnpm-workspace.yaml',
  '**/.pnpmfile.cjs',
  '**/bunfig.toml',
  '**/pip.conf',
  '**/pip.ini',
  '**/.pypirc',
  '**/.condarc',
  '**/poetry.toml',
  '**/uv.toml',
]);

const INSTALL_SCRIPT = /"(?<name>preinstall|install|postinstall|prepare|preprepare|postprepare|prepublish|prepack|postpack)"\s*:/;
const REGISTRY_KEY = /"(?:registry|publishConfig|packageManager)"\s*:/;
/** `"name": "spec"` in a package.json. */
const ENTRY = /^\s*"(?<name>(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*)"\s*:\s*"(?<spec>[^"]*)"/i;
/** Specs that fetch from somewhere other than the registry. */
const REMOTE_SPEC = /^(?:git\+|git:|github:|gitlab:|bitbucket:|gist:|https?:|file:|link:|portal:|patch:)|\.(?:tgz|tar\.gz|tar|zip)(?:#.*)?$|^[\w.-]+\/[\w.-]+(?:#.*)?$/i;
/** Specs that look like a registry version (so the key is a dependency, not a script or a field). */
const VERSION_SPEC = /^(?:[\^~<>=*]|\d|latest$|next$|workspace:|npm:|catalog:|x$)/i;
/** package.json keys whose values look like versions but are not dependencies. */
const NON_DEPENDENCY_KEYS = new Set([
  'name', 'version', 'description', 'license', 'author', 'email', 'homepage', 'url', 'repository', 'bugs', 'funding', 'directory',
  'type', 'main', 'module', 'types', 'typings', 'browser', 'bin', 'import', 'require', 'default', 'node', 'npm', 'yarn', 'pnpm', 'bun', 'vscode',
]);

const REQUIREMENT_SOURCE = /(?:^|\s)(?:-e|--editable|-i|--index-url|--extra-index-url|-f|--find-links|--trusted-host)\b|(?:git\+|hg\+|svn\+|bzr\+|https?:\/\/|file:)|@\s*(?:https?|file):/;
const REQUIREMENT_NAME = /^\s*(?<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:[<>=!~;@]|$)/;

interface Finding {
  kind: SupplyChainKind;
  line: number;
  message: string;
}

function packageJsonFindings(file: ChangedFile): Finding[] {
  const findings: Finding[] = [];
  const removedNames = new Set(file.removed.map((line) => ENTRY.exec(line.text)?.groups?.['name']).filter(Boolean));
  for (const line of file.added) {
    const script = INSTALL_SCRIPT.exec(line.text);
    if (script) {
      findings.push({ kind: 'install-script', line: line.line, message: `install-time script "${script.groups?.['name']}" in ${file.path}:${line.line} runs on every install` });
      continue;
    }
    if (REGISTRY_KEY.test(line.text)) {
      findings.push({ kind: 'registry-config', line: line.line, message: `registry configuration in ${file.path}:${line.line}` });
      continue;
    }
    const entry = ENTRY.exec(line.text);
    const name = entry?.groups?.['name'];
    const spec = entry?.groups?.['spec'] ?? '';
    if (!name || NON_DEPENDENCY_KEYS.has(name)) continue;
    if (REMOTE_SPEC.test(spec) && !/^[./]/.test(spec)) {
      findings.push({ kind: 'dependency-source', line: line.line, message: `dependency "${name}" comes from "${spec}" (${file.path}:${line.line}), not from the registry` });
    } else if (VERSION_SPEC.test(spec) && !removedNames.has(name)) {
      findings.push({ kind: 'new-dependency', line: line.line, message: `new dependency "${name}@${spec}" in ${file.path}:${line.line}` });
    }
  }
  return findings;
}

function requirementName(line: AddedLine): string | undefined {
  const text = line.text.replace(/#.*$/, '');
  return REQUIREMENT_NAME.exec(text)?.groups?.['name']?.toLowerCase().replace(/[._]/g, '-');
}

function requirementsFindings(file: ChangedFile): Finding[] {
  const findings: Finding[] = [];
  const removedNames = new Set(file.removed.map(requirementName).filter(Boolean));
  for (const line of file.added) {
    const text = line.text.replace(/\s#.*$/, '').trim();
    if (text === '' || text.startsWith('#')) continue;
    if (REQUIREMENT_SOURCE.test(text)) {
      findings.push({ kind: 'dependency-source', line: line.line, message: `"${text.slice(0, 120)}" in ${file.path}:${line.line} installs from outside the package index` });
      continue;
    }
    const name = requirementName(line);
    if (name && !removedNames.has(name)) findings.push({ kind: 'new-dependency', line: line.line, message: `new dependency "${text.slice(0, 120)}" in ${file.path}:${line.line}` });
  }
  return findings;
}

function fileFindings(file: ChangedFile): Finding[] {
  if (file.change === 'deleted') return [];
  if (REGISTRY_CONFIG(file.path) || (file.oldPath !== undefined && REGISTRY_CONFIG(file.oldPath))) {
    return [{ kind: 'registry-config', line: file.added[0]?.line ?? 0, message: `${file.path} configures where packages come from (${file.change})` }];
  }
  if (PACKAGE_JSON.test(file.path)) return packageJsonFindings(file);
  if (REQUIREMENTS.test(file.path)) return requirementsFindings(file);
  return [];
}

const POLICY_KEY: Record<SupplyChainKind, keyof RepoPolicy['supplyChain']> = {
  'install-script': 'installScripts',
  'dependency-source': 'dependencySources',
  'registry-config': 'registryConfig',
  'new-dependency': 'newDependencies',
};

/** Supply-chain violations of one changed file under the repo's `supplyChain` settings. */
export function supplyChainViolations(file: ChangedFile, policy: RepoPolicy): PolicyViolation[] {
  return fileFindings(file)
    .filter((finding) => policy.supplyChain[POLICY_KEY[finding.kind]] !== 'allow')
    .map((finding) => ({
      rule: `supply-chain:${finding.kind}`,
      path: file.path,
      ...(finding.line > 0 ? { line: finding.line } : {}),
      message: `${finding.message}; supply-chain changes need a repo owner's override`,
    }));
}
