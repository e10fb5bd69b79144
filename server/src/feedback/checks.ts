import type { Sandbox } from '../sandbox/types';
import { shellQuote, toRepoPath } from './runners';
import type { ChecksConfig, Diagnostic, TestReport } from './types';

export type CheckerName = NonNullable<ChecksConfig['linters']>[number];

/**
 * Detects which of the repo's own checkers the snapshot can run, in one exec. A checker counts
 * only when its config is in the repo (eslint, tsc) or it needs none (pyflakes, flake8, ruff,
 * py_compile, node --check, go vet) and its binary is present: the engine never installs tools.
 */
export async function detectCheckers(sandbox: Sandbox): Promise<CheckerName[]> {
  const script = `
has() { command -v "$1" >/dev/null 2>&1; }
local_bin() { [ -x "node_modules/.bin/$1" ] || has "$1"; }
if [ -f tsconfig.json ] && local_bin tsc; then echo tsc; fi
if ls eslint.config.* .eslintrc* >/dev/null 2>&1 && [ -x node_modules/.bin/eslint ]; then echo eslint; fi
if has ruff; then echo ruff; elif has flake8; then echo flake8; elif python3 -c 'import pyflakes' >/dev/null 2>&1; then echo pyflakes; fi
if has python3; then echo py_compile; fi
if has node; then echo node_check; fi
if [ -f go.mod ] && has go; then echo go_vet; fi
`;
  const result = await sandbox.exec({ cmd: ['bash', '-c', script], timeoutMs: 30_000 });
  return result.stdout.split('\n').map((line) => line.trim()).filter((line): line is CheckerName => CHECKERS.has(line));
}

const CHECKERS = new Set<string>(['tsc', 'eslint', 'ruff', 'flake8', 'pyflakes', 'py_compile', 'node_check', 'go_vet']);

const PY_COMPILE = `
import sys
for path in sys.argv[1:]:
    try:
        with open(path, 'rb') as handle:
            compile(handle.read(), path, 'exec')
    except SyntaxError as error:
        print(f"{path}:{error.lineno or 1}:{error.offset or 0}: {type(error).__name__}: {error.msg}")
`;

const NODE_CHECK = `
const { spawnSync } = require('node:child_process');
for (const file of process.argv.slice(1)) {
  const run = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' });
  if (run.status === 0) continue;
  const lines = run.stderr.split('\\n');
  const at = /:(\\d+)$/.exec(lines[0] || '');
  const error = lines.find((line) => /^\\w*Error: /.test(line)) || 'syntax error';
  console.log(file + ':' + (at ? at[1] : 1) + ': ' + error);
}
`;

function commandFor(checker: CheckerName, files: string[]): string | undefined {
  const py = files.filter((file) => file.endsWith('.py')).map(shellQuote);
  const js = files.filter((file) => /\.(js|cjs|mjs)$/.test(file)).map(shellQuote);
  const scripts = files.filter((file) => /\.(ts|tsx|mts|cts|js|jsx|cjs|mjs)$/.test(file)).map(shellQuote);
  const bin = (name: string): string => `$( [ -x node_modules/.bin/${name} ] && echo node_modules/.bin/${name} || echo ${name} )`;
  switch (checker) {
    case 'tsc':
      return scripts.length ? `${bin('tsc')} --noEmit --pretty false -p tsconfig.json` : undefined;
    case 'eslint':
      return scripts.length ? `node_modules/.bin/eslint -f unix ${scripts.join(' ')}` : undefined;
    case 'ruff':
      return py.length ? `ruff check --output-format=concise --no-cache ${py.join(' ')}` : undefined;
    case 'flake8':
      return py.length ? `flake8 ${py.join(' ')}` : undefined;
    case 'pyflakes':
      return py.length ? `python3 -m pyflakes ${py.join(' ')}` : undefined;
    case 'py_compile':
      return py.length ? `python3 -c ${shellQuote(PY_COMPILE)} ${py.join(' ')}` : undefined;
    case 'node_check':
      return js.length ? `node -e ${shellQuote(NODE_CHECK)} ${js.join(' ')}` : undefined;
    case 'go_vet':
      return files.some((file) => file.endsWith('.go')) ? 'go vet ./... 2>&1' : undefined;
  }
}

/** Which findings block the verified stop: type errors, syntax errors, undefined names, eslint errors. */
function severityOf(checker: CheckerName, message: string): Diagnostic['severity'] {
  switch (checker) {
    case 'tsc':
      return / warning /.test(message) ? 'warning' : 'error';
    case 'eslint':
      return /\[Warning\//.test(message) ? 'warning' : 'error';
    case 'ruff':
    case 'flake8':
      return /^(E9\d\d|F63\d|F7\d\d|F82\d)\b/.test(message) ? 'error' : 'warning';
    case 'pyflakes':
      return /undefined name|syntax|invalid/i.test(message) ? 'error' : 'warning';
    default:
      return 'error';
  }
}

const LINE = /^(.+?)(?:\((\d+),(\d+)\)|:(\d+)(?::(\d+))?):? (.+)$/;

export function parseDiagnostics(checker: CheckerName, output: string, files: Set<string>): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const raw of output.split('\n')) {
    const match = LINE.exec(raw.trim());
    if (!match?.[1] || !match[6]) continue;
    const line = Number(match[2] ?? match[4]);
    const column = match[3] ?? match[5];
    const message = match[6].trim();
    const diagnostic: Diagnostic = {
      tool: checker,
      path: toRepoPath(match[1].replace(/^\.\//, ''), files),
      line,
      severity: severityOf(checker, message),
      message: message.replace(/^error /, ''),
    };
    if (column !== undefined) diagnostic.column = Number(column);
    diagnostics.push(diagnostic);
  }
  return diagnostics;
}

/**
 * Runs the checkers over `files` (the change) and keeps findings in `relevant` files (the change
 * and its importers): a whole-project checker such as tsc also reports what the change broke in
 * callers, while errors that predate the change in unrelated files stay out.
 */
export async function runCheckers(
  sandbox: Sandbox,
  checkers: CheckerName[],
  files: string[],
  relevant: Set<string>,
  signal?: AbortSignal,
): Promise<Diagnostic[]> {
  const diagnostics: Diagnostic[] = [];
  const fileSet = new Set([...files, ...relevant]);
  for (const checker of checkers) {
    if (checker === 'py_compile' && checkers.some((other) => other === 'ruff' || other === 'flake8' || other === 'pyflakes')) continue;
    const command = commandFor(checker, files);
    if (!command) continue;
    const options: Parameters<Sandbox['exec']>[0] = { cmd: ['bash', '-c', command], timeoutMs: 300_000, outputCapBytes: 256 * 1024 };
    if (signal) options.signal = signal;
    const result = await sandbox.exec(options);
    const found = parseDiagnostics(checker, `${result.stdout}\n${result.stderr}`, fileSet);
    diagnostics.push(...found.filter((diagnostic) => relevant.has(diagnostic.path) || files.includes(diagnostic.path)));
  }
  return diagnostics;
}

/** `file:line: message` lines, the compact form the model reads. */
export function formatDiagnostics(diagnostics: Diagnostic[], limit = 50): string {
  const lines = diagnostics.slice(0, limit).map((d) => `${d.path}:${d.line}${d.column ? `:${d.column}` : ''}: ${d.severity}: ${d.message} (${d.tool})`);
  if (diagnostics.length > limit) lines.push(`… ${diagnostics.length - limit} more`);
  return lines.join('\n');
}

export interface StopVerdict {
  green: boolean;
  reasons: string[];
}

/**
 * The feedback half of the verified stop: green only when the tests are ok (quarantined tests
 * excluded) and no checker reported an error. Warnings are shown to the model but do not block.
 */
export function feedbackVerdict(report: TestReport, diagnostics: Diagnostic[]): StopVerdict {
  const reasons: string[] = [];
  if (!report.ok) reasons.push(`${report.failed} test(s) failing (${report.command})`);
  const errors = diagnostics.filter((diagnostic) => diagnostic.severity === 'error');
  if (errors.length > 0) reasons.push(`${errors.length} checker error(s): ${formatDiagnostics(errors, 5)}`);
  return { green: reasons.length === 0, reasons };
}
