import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, readdir, realpath, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ExecOptions, ExecResult, FileEntry, Sandbox } from '../../sandbox/types';
import { capOutput } from '../tools/output';

const execFileAsync = promisify(execFile);

/**
 * A Sandbox backed by a host directory, for unit tests of the agent only (no isolation at all).
 * The real evidence that tools work in gVisor is the e2e tests against DockerSandboxDriver.
 */
export class HostSandbox implements Sandbox {
  readonly id: string;
  readonly image = 'host-directory';

  constructor(
    readonly root: string,
    readonly baseSha: string,
  ) {
    this.id = `host-${Math.random().toString(36).slice(2, 10)}`;
  }

  private async inside(path: string): Promise<string> {
    if (isAbsolute(path)) throw new Error(`absolute path refused: ${path}`);
    const target = resolve(this.root, path);
    const rel = relative(this.root, target);
    if (rel.startsWith('..')) throw new Error(`path escapes the workspace: ${path}`);
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
    if (command === undefined) throw new Error('empty command');
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: this.root, LANG: 'C.UTF-8', CI: 'true', ...options.env },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      options.onOutput?.(chunk.toString('utf8'), 'stdout');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      options.onOutput?.(chunk.toString('utf8'), 'stderr');
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
    const killGroup = () => {
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
      child.on('error', () => done(127));
      child.on('close', (code, signal) => done(code ?? (signal ? 137 : 1)));
    });
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', killGroup);
    const cap = options.outputCapBytes ?? 64 * 1024;
    const out = capOutput(stdout, cap);
    const err = capOutput(stderr, cap);
    return {
      exitCode,
      stdout: out.text,
      stderr: err.text,
      truncated: out.truncated || err.truncated,
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

  async listFiles(dir = '.'): Promise<FileEntry[]> {
    const base = await this.inside(dir);
    const entries = await readdir(base, { withFileTypes: true });
    const result: FileEntry[] = [];
    for (const entry of entries) {
      const full = join(base, entry.name);
      const info = await stat(full).catch(() => undefined);
      result.push({
        path: relative(this.root, full),
        type: entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'dir' : 'file',
        size: info?.size ?? 0,
      });
    }
    return result;
  }

  async diff(): Promise<string> {
    await execFileAsync('git', ['add', '-A', '-N'], { cwd: this.root });
    const { stdout } = await execFileAsync('git', ['diff', this.baseSha], { cwd: this.root, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  }

  async destroy(): Promise<void> {}
}
