import { commandForms, computedShellInput } from './guard-decode';

/*
 * Command guard: recognises shell commands that destroy data, leave the sandbox's purpose or
 * publish something, so a human approves them before they run (the Approver; a denial reaches the
 * model as an is_error tool result).
 *
 * What it catches: the plain, literal spellings listed in RULES below, anywhere in a command line
 * (after `;`, `&&`, `||`, `|`, newlines, `$(...)`, `sudo`/`env`/`xargs`/`eval`/`sh -c` prefixes,
 * with quotes around arguments), in the command as typed and in what its obvious wrappers decode
 * to (`guard-decode.ts`: base64/xxd/printf/rev pipelines, `$'…'`, literal variables, literal text
 * piped to a shell); and any shell handed a string computed when it runs (`sh -c "$(…)"`,
 * `eval "$x"`, `… | sh`), whatever it would decode to.
 *
 * What it will NOT catch (a blocklist cannot; the real defences are the gVisor sandbox with no
 * network and no credentials, and the policy check on the final diff):
 *  - obfuscation that never reaches a shell as a computed string: backslash splitting inside a
 *    word (`r\m -rf /`), variables set by an earlier command, aliases and shell functions defined
 *    earlier, `find -exec`, `xargs` of a file's contents;
 *  - scripts written to disk and then run (`echo 'rm -rf /' > x.sh && bash x.sh`), Makefile
 *    targets, npm scripts or test code that do the same;
 *  - destructive calls made from inside a language runtime (`python -c "shutil.rmtree('/')"`,
 *    `node -e "fs.rmSync(...)"`), `find -exec rm`, database clients fed a SQL file;
 *  - `rm -rf` on paths that are inside the workspace (the repo is recoverable from the base SHA)
 *    and on /tmp (scratch space);
 *  - anything outside a command line (the edit_file tool has its own checks).
 */

export interface GuardMatch {
  rule: string;
  reason: string;
}

interface GuardRule {
  id: string;
  reason: string;
  matches(command: string, segments: string[][]): boolean;
}

/** Splits a command line into simple commands (token lists) with quotes removed. */
export function splitCommand(command: string): string[][] {
  return command
    .replace(/\$\(|`|\(|\)/g, ';')
    .split(/;|&&|\|\||\||\n|&/)
    .map((segment) =>
      segment
        .replace(/["']/g, '')
        .trim()
        .split(/\s+/)
        .filter((token) => token.length > 0),
    )
    .filter((tokens) => tokens.length > 0);
}

const PREFIX_COMMANDS = new Set([
  'sudo', 'env', 'xargs', 'command', 'exec', 'nohup', 'time', 'nice', 'doas', 'timeout', 'eval',
  '{', '!', 'if', 'then', 'else', 'do', 'while', 'until',
]);

/** The program and its arguments after wrappers such as `sudo`, `env X=1` and `xargs`. */
function program(tokens: string[]): { name: string; args: string[] } | undefined {
  let index = 0;
  while (index < tokens.length) {
    const token = tokens[index] ?? '';
    // `sh -c 'rm -rf /'`: the shell runs its argument, which is the command that matters.
    if (/^(?:.*\/)?(?:ba|z|da|k|fi)?sh$/.test(token) && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(tokens[index + 1] ?? '')) {
      index += 2;
      continue;
    }
    if (PREFIX_COMMANDS.has(token) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(token) || (index > 0 && (token.startsWith('-') || /^\d+(\.\d+)?[smhd]?$/.test(token)))) {
      index += 1;
      continue;
    }
    break;
  }
  const name = tokens[index];
  if (name === undefined) return undefined;
  return { name: name.replace(/^.*\//, ''), args: tokens.slice(index + 1) };
}

function findPrograms(segments: string[][], name: string): string[][] {
  const found: string[][] = [];
  for (const tokens of segments) {
    const parsed = program(tokens);
    if (parsed && parsed.name === name) found.push(parsed.args);
  }
  return found;
}

/** Targets of a recursive delete that need approval: the whole workspace, or anything outside it. */
function isProtectedTarget(target: string): boolean {
  const path = target.replace(/\/+$/, '') || '/';
  if (path === '.' || path === '/workspace') return true;
  return isOutsideWorkspace(path);
}

/** Paths outside /workspace (except /tmp), the home directory and the root. */
function isOutsideWorkspace(target: string): boolean {
  const path = target.replace(/\/+$/, '') || '/';
  if (path === '/' || path === '/*' || path === '..') return true;
  if (path.startsWith('~') || path.startsWith('$HOME') || path.startsWith('${HOME}')) return true;
  if (path.startsWith('../') || path.includes('/../') || path.endsWith('/..')) return true;
  if (path.startsWith('/')) return !(path === '/workspace' || path.startsWith('/workspace/') || path.startsWith('/tmp/'));
  return false;
}

function flagsOf(args: string[]): string {
  return args
    .filter((arg) => arg.startsWith('-'))
    .map((arg) => (arg.startsWith('--') ? ` ${arg} ` : arg.slice(1)))
    .join('');
}

/** The git subcommand after global options such as `-C dir` and `-c key=value`. */
function gitSubcommand(args: string[]): { name: string; args: string[] } | undefined {
  let index = 0;
  while (index < args.length) {
    const arg = args[index] ?? '';
    if (arg === '-C' || arg === '-c' || arg === '--git-dir' || arg === '--work-tree') index += 2;
    else if (arg.startsWith('-')) index += 1;
    else break;
  }
  const name = args[index];
  return name === undefined ? undefined : { name, args: args.slice(index + 1) };
}

function gitRuns(segments: string[][], subcommand: string, extra: (args: string[]) => boolean = () => true): boolean {
  return findPrograms(segments, 'git').some((args) => {
    const sub = gitSubcommand(args);
    return sub !== undefined && sub.name === subcommand && extra(sub.args);
  });
}

const SHELLS = '(?:ba|z|da|k|fi|c|tc)?sh|python[0-9.]*|perl|ruby|node';

export const RULES: GuardRule[] = [
  {
    id: 'rm-recursive-outside-workspace',
    reason: 'recursive delete of /, the home directory, the whole workspace or a path outside it',
    matches: (_command, segments) =>
      findPrograms(segments, 'rm').some((args) => {
        const flags = flagsOf(args);
        const recursive = /[rR]/.test(flags.replace(/ --[a-z-]+ /g, '')) || flags.includes('--recursive');
        return recursive && args.filter((arg) => !arg.startsWith('-')).some(isProtectedTarget);
      }),
  },
  {
    id: 'find-delete-outside-workspace',
    reason: 'find -delete on a path outside the workspace',
    matches: (_command, segments) =>
      findPrograms(segments, 'find').some(
        (args) => args.includes('-delete') && args.filter((arg) => !arg.startsWith('-')).slice(0, 1).some(isOutsideWorkspace),
      ),
  },
  {
    id: 'git-push',
    reason: 'git push: only the server pushes, once, after review',
    matches: (_command, segments) => gitRuns(segments, 'push'),
  },
  {
    id: 'git-reset-hard',
    reason: 'git reset --hard throws away the work in the workspace',
    matches: (_command, segments) => gitRuns(segments, 'reset', (args) => args.includes('--hard')),
  },
  {
    id: 'git-clean-force',
    reason: 'git clean -f deletes untracked files, including new files written for this ticket',
    matches: (_command, segments) => gitRuns(segments, 'clean', (args) => /f/.test(flagsOf(args)) || args.includes('--force')),
  },
  {
    id: 'pipe-to-shell',
    reason: 'downloads code and runs it (curl|sh, wget|bash, sh <(curl ...))',
    matches: (command) =>
      new RegExp(`\\b(?:curl|wget|fetch)\\b[^|;&\\n]*\\|\\s*(?:sudo\\s+)?(?:${SHELLS})\\b`).test(command) ||
      new RegExp(`\\b(?:${SHELLS})\\s+(?:-c\\s+)?["']?(?:<\\(|\\$\\()\\s*(?:curl|wget)\\b`).test(command),
  },
  {
    id: 'sql-drop',
    reason: 'drops or empties a database, schema or table',
    matches: (command) => /\b(?:drop\s+(?:database|schema|table)|truncate\s+table)\b/i.test(command),
  },
  {
    id: 'dropdb',
    reason: 'dropdb deletes a database',
    matches: (_command, segments) => findPrograms(segments, 'dropdb').length > 0,
  },
  {
    id: 'mkfs',
    reason: 'mkfs formats a file system',
    matches: (_command, segments) => segments.some((tokens) => /^mkfs(\.\w+)?$/.test(program(tokens)?.name ?? '')),
  },
  {
    id: 'write-block-device',
    reason: 'writes to a raw block device (dd of=/dev/..., > /dev/sdX)',
    matches: (command, segments) =>
      findPrograms(segments, 'dd').some((args) => args.some((arg) => /^of=\/dev\/(?!null$|zero$|stdout$|stderr$)/.test(arg))) ||
      />\s*\/dev\/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)/.test(command),
  },
  {
    id: 'fork-bomb',
    reason: 'a fork bomb',
    matches: (command) => /([A-Za-z_:][\w:]*)\(\)\{\1\|\1&\};\1/.test(command.replace(/\s+/g, '')),
  },
  {
    id: 'recursive-permissions-outside-workspace',
    reason: 'recursive chmod/chown of /, the home directory or a path outside the workspace',
    matches: (_command, segments) =>
      ['chmod', 'chown', 'chgrp'].some((name) =>
        findPrograms(segments, name).some((args) => {
          const recursive = /R/.test(flagsOf(args)) || args.includes('--recursive');
          return recursive && args.filter((arg) => !arg.startsWith('-')).slice(1).some(isProtectedTarget);
        }),
      ),
  },
  {
    id: 'kubectl-delete',
    reason: 'kubectl delete removes cluster resources',
    matches: (_command, segments) => findPrograms(segments, 'kubectl').some((args) => args.includes('delete')),
  },
  {
    id: 'terraform-destroy',
    reason: 'terraform destroy (or apply -destroy / -auto-approve) changes real infrastructure',
    matches: (_command, segments) =>
      ['terraform', 'tofu'].some((name) =>
        findPrograms(segments, name).some(
          (args) => args.includes('destroy') || args.includes('-destroy') || (args.includes('apply') && args.some((arg) => arg.startsWith('-auto-approve'))),
        ),
      ),
  },
  {
    id: 'helm-uninstall',
    reason: 'helm uninstall/delete removes a release',
    matches: (_command, segments) => findPrograms(segments, 'helm').some((args) => args.includes('uninstall') || args.includes('delete')),
  },
  {
    id: 'cloud-delete',
    reason: 'deletes cloud resources (aws s3 rm/rb, aws ... delete-*, gcloud ... delete, az ... delete)',
    matches: (_command, segments) =>
      findPrograms(segments, 'aws').some((args) => args.includes('rb') || (args.includes('rm') && args.includes('--recursive')) || args.some((arg) => arg.startsWith('delete-') || arg.startsWith('terminate-'))) ||
      ['gcloud', 'az'].some((name) => findPrograms(segments, name).some((args) => args.includes('delete'))),
  },
  {
    id: 'publish-package',
    reason: 'publishes a package or image (npm publish, twine upload, cargo publish, gem push, docker push)',
    matches: (_command, segments) =>
      findPrograms(segments, 'npm').some((args) => args[0] === 'publish') ||
      findPrograms(segments, 'yarn').some((args) => args[0] === 'publish' || (args[0] === 'npm' && args[1] === 'publish')) ||
      findPrograms(segments, 'pnpm').some((args) => args[0] === 'publish') ||
      findPrograms(segments, 'twine').some((args) => args[0] === 'upload') ||
      findPrograms(segments, 'cargo').some((args) => args[0] === 'publish') ||
      findPrograms(segments, 'gem').some((args) => args[0] === 'push') ||
      findPrograms(segments, 'docker').some((args) => args[0] === 'push'),
  },
  {
    id: 'shutdown',
    reason: 'shuts down or reboots the machine',
    matches: (_command, segments) =>
      segments.some((tokens) => ['shutdown', 'reboot', 'halt', 'poweroff'].includes(program(tokens)?.name ?? '')) ||
      findPrograms(segments, 'init').some((args) => args[0] === '0' || args[0] === '6'),
  },
  {
    id: 'kill-all',
    reason: 'kills every process (kill -1)',
    matches: (_command, segments) => findPrograms(segments, 'kill').some((args) => args.includes('-1')),
  },
  {
    // Last: a decoded form that trips a rule above names the real reason.
    id: 'shell-runs-computed-string',
    reason: 'a shell runs a string computed when the command runs (sh -c / bash -c / eval of a command substitution or variable, a pipe into sh): what runs cannot be seen before it runs',
    matches: (command) => computedShellInput(command) !== undefined,
  },
];

/** The first rule a command line trips, if any. */
export function checkCommand(command: string): GuardMatch | undefined {
  // Decided on what runs: the typed line and what its wrappers decode to.
  const forms = commandForms(command).map((form) => ({ form, segments: splitCommand(form) }));
  for (const rule of RULES) {
    const tripped = forms.find(({ form, segments }) => rule.matches(form, segments));
    if (!tripped) continue;
    if (rule.id === 'shell-runs-computed-string') return { rule: rule.id, reason: `${computedShellInput(tripped.form) ?? rule.reason}; approve only if you know what it runs` };
    return { rule: rule.id, reason: tripped.form === command ? rule.reason : `${rule.reason} (decoded from the command's wrapping: ${tripped.form.slice(0, 200)})` };
  }
  return undefined;
}
