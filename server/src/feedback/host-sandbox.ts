import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, relative } from 'node:path';
import type { ExecOptions, ExecResult, FileEntry, Sandbox } from '../sandbox/types';

/**
 * A `Sandbox` backed by a directory on the host, for unit tests of the feedback engine only.
 * It isolates nothing: commands run as the current user with the host's tools. The evidence that
 * the engine works inside gVisor is the *.int.test.ts suite against `DockerSandboxDriver`.
 */
export class HostSandbox implements Sandbox {
  readonly id: string;
  readonly image = 'host';

  constructor(
    readonly root: string,
    readonly baseSha: string,
    private readonly extraPath: string[] = [],
  ) {
    this.id = `host:${root}`;
  }

  private resolve(path: string): string {
    const clean = normalize(path || '.');
    if (isAbsolute(clean) || clean === '..' || clean.startsWith('../')) {
      throw new Error(`path escapes the workspace: ${path}`);
    }
    return join(this.root, clean);
  }

  exec(opts: ExecOptions): Promise<ExecResult> {
    const started = Date.now();
    const cap = opts.outputCapBytes ?? 64 * 1024;
    const [command, ...args] = opts.cmd;
    if (!command) return Promise.reject(new Error('exec: empty command'));
    const path = [...this.extraPath, process.env.PATH ?? ''].join(':');
    return new Promise((resolvePromise, reject) => {
      const child = spawn(command, args, {
        cwd: this.resolve(opts.cwd ?? '.'),
        env: { ...process.env, PATH: path, ...opts.env },
        detached: true,
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      const kill = (): void => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, opts.timeoutMs ?? 120_000);
      opts.signal?.addEventListener('abort', kill, { once: true });
      child.stdout.on('data', (chunk: Buffer) => {
        out.push(chunk);
        opts.onOutput?.(chunk.toString('utf8'), 'stdout');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        err.push(chunk);
        opts.onOutput?.(chunk.toString('utf8'), 'stderr');
      });
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        const stdout = capped(Buffer.concat(out), cap);
        const stderr = capped(Buffer.concat(err), cap);
        resolvePromise({
          exitCode: code ?? 137,
          stdout: stdout.text,
          stderr: stderr.text,
          truncated: stdout.truncated || stderr.truncated,
          timedOut,
          durationMs: Date.now() - started,
        });
      });
      if (opts.stdin !== undefined) child.stdin.end(opts.stdin);
      else child.stdin.end();
    });
  }

  readFile(path: string): Promise<Buffer> {
    return readFile(this.resolve(path));
  }

  async writeFile(path: string, content: string | Buffer): Promise<void> {
    const target = this.resolve(path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
  }

  async listFiles(dir = '.'): Promise<FileEntry[]> {
    const base = this.resolve(dir);
    const entries = await readdir(base, { withFileTypes: true });
    const result: FileEntry[] = [];
    for (const entry of entries) {
      if (entry.name === '.git') continue;
      const full = join(base, entry.name);
      const info = await stat(full);
      const type = entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'dir' : 'file';
      result.push({ path: relative(this.root, full), type, size: info.size });
    }
    return result;
  }

  async diff(): Promise<string> {
    const result = await this.exec({
      cmd: ['bash', '-c', 'git add -A -N && git diff --no-color "$0"', this.baseSha],
      outputCapBytes: 16 * 1024 * 1024,
    });
    return result.stdout;
  }

  async destroy(): Promise<void> {}
}

function capped(buffer: Buffer, cap: number): { text: string; truncated: boolean } {
  if (buffer.length <= cap) return { text: buffer.toString('utf8'), truncated: false };
  const half = Math.floor(cap / 2);
  const head = buffer.subarray(0, half).toString('utf8');
  const tail = buffer.subarray(buffer.length - half).toString('utf8');
  return { text: `${head}\n…[${buffer.length - cap} bytes dropped]…\n${tail}`, truncated: true };
}
