import { execFile, spawn } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, realpath, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CappedOutput } from '../output';
import type { ExecOptions, ExecResult, FileEntry, Sandbox } from '../types';

const execFileAsync = promisify(execFile);
const DEFAULT_OUTPUT_CAP = 64 * 1024;

/**
 * HOME for every HostSandbox: not the host user's (their login profile would run in `bash -l`,
 * which can take seconds) and not the workspace (tools' caches would show up in diff()). One
 * fixed directory, shared and kept, so that test processes, which end without cleaning up, do not
 * leave one behind each.
 */
const HOME = join(tmpdir(), `dockhand-host-home-${process.getuid?.() ?? 0}`);

/**
 * A `Sandbox` backed by a directory on the host, for unit tests and host benchmarks of the code
 * that uses sandboxes (the agent's tools and loop, the feedback engine). It isolates nothing:
 * commands run as the current user with the host's tools. Where a caller can see it, it behaves
 * as the real one does: it refuses the same paths, builds the environment from an allowlist with
 * a HOME of its own, and caps output in bytes with the same note. It differs in that a command
 * killed at its deadline exits 137 (the real one: 124); callers read `timedOut`. The evidence
 * that any of this works in gVisor is the *.int.test.ts suites against `DockerSandboxDriver`.
 */
export class HostSandbox implements Sandbox {
  readonly id: string;
  readonly image = 'host-directory';

  /** `extraPath`: directories put in front of the host's PATH (a repository's node_modules/.bin). */
  constructor(
    readonly root: string,
    readonly baseSha: string,
    private readonly extraPath: string[] = [],
  ) {
    this.id = `host-${Math.random().toString(36).slice(2, 10)}`;
  }

  private async inside(path: string): Promise<string> {
    if (isAbsolute(path)) throw new Error(`absolute path refused: ${path}`);
    const target = resolve(this.root, path);
    if (relative(this.root, target).startsWith('..')) throw new Error(`path escapes the workspace: ${path}`);
    const real = await realpath(target).catch(() => undefined);
    if (real !== undefined) {
      const rootReal = await realpath(this.root);
      if (relative(rootReal, real).startsWith('..')) throw new Error(`symlink points outside the workspace: ${path}`);
    }
    return target;
  }

  async exec(options: ExecOptions): Promise<ExecResult> {
    const started = performance.now();
    const cwd = options.cwd ? await this.inside(options.cwd) : this.root;
    const [command, ...args] = options.cmd;
    if (command === undefined) throw new Error('exec: empty command');
    const cap = options.outputCapBytes ?? DEFAULT_OUTPUT_CAP;
    const stdout = new CappedOutput(cap);
    const stderr = new CappedOutput(cap);
    await mkdir(HOME, { recursive: true });
    const path = [...this.extraPath, process.env.PATH ?? '/usr/bin:/bin'].join(':');
    const child = spawn(command, args, {
      cwd,
      env: { PATH: path, HOME, LANG: 'C.UTF-8', CI: 'true', ...options.env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      options.onOutput?.(chunk.toString('utf8'), 'stdout');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      options.onOutput?.(chunk.toString('utf8'), 'stderr');
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
    let timedOut = false;
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs ?? 120_000);
    options.signal?.addEventListener('abort', killGroup, { once: true });
    const exitCode = await new Promise<number>((done) => {
      // A command that cannot start exits 127, as it does from the real sandbox's shell.
      child.on('error', (error) => {
        stderr.push(Buffer.from(`${command}: ${error.message}\n`));
        done(127);
      });
      child.on('close', (code, signal) => done(code ?? (signal ? 137 : 1)));
    });
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', killGroup);
    return {
      exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
      truncated: stdout.truncated || stderr.truncated,
      timedOut,
      durationMs: performance.now() - started,
    };
  }

  async readFile(path: string): Promise<Buffer> {
    return readFile(await this.inside(path));
  }

  async writeFile(path: string, content: string | Buffer): Promise<void> {
    const target = await this.inside(path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
  }

  /** One level, sorted, `.git` and `node_modules` left out, as the real sandbox lists. */
  async listFiles(dir = '.'): Promise<FileEntry[]> {
    const base = await this.inside(dir);
    const entries = await readdir(base, { withFileTypes: true });
    const result: FileEntry[] = [];
    for (const entry of entries) {
      if (entry.name === '.git' || entry.name === 'node_modules') continue;
      const full = join(base, entry.name);
      const info = await lstat(full).catch(() => undefined);
      result.push({
        path: relative(this.root, full),
        type: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'dir' : 'file',
        size: info?.size ?? 0,
      });
    }
    return result.sort((a, b) => a.path.localeCompare(b.path));
  }

  /** Tracked and untracked changes against `baseSha` (untracked files are marked intent-to-add). */
  async diff(): Promise<string> {
    await execFileAsync('git', ['add', '-A', '-N'], { cwd: this.root });
    const { stdout } = await execFileAsync('git', ['diff', '--no-color', this.baseSha], { cwd: this.root, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  }

  async destroy(): Promise<void> {}
}
