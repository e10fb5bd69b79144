import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { DockhandError } from '../errors';
import { DockerStreamDemuxer } from './demux';
import { sandboxEnvironment } from './environment';
import { CappedOutput } from './output';
import { RESOLVE_INSIDE_WORKSPACE, WORKSPACE, pathError, workspacePath } from './paths';
import type { ExecOptions, ExecResult, FileEntry, Sandbox } from './types';

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_OUTPUT_CAP = 64 * 1024;
/** How long a killed command's stream may take to close before we stop waiting for it. */
const KILL_GRACE_MS = 2_000;
const SANDBOX_USER = '1000:1000';
/** Extra time the in-sandbox `timeout` gets before the host kills the tree itself. */
const BACKSTOP_MS = 1_500;

export interface RawResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
}

export interface ListOptions {
  /** Walk subdirectories too (skipping .git and node_modules). Default false. */
  recursive?: boolean;
  /** Stop after this many entries. Default 5,000. */
  limit?: number;
}

/**
 * One running sandbox container. Every command runs as uid 1000 through `docker exec`; file
 * operations are execs too (one round trip each, binary-safe through the multiplexed stream),
 * which measured faster under gVisor than getArchive/putArchive plus a separate path check.
 */
export class DockerSandbox implements Sandbox {
  private destroyed = false;
  private readonly disposers: Array<() => void> = [];
  baseSha: string;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    readonly id: string,
    readonly image: string,
    baseSha: string,
    private readonly baseEnv: Record<string, string>,
    /** Address-space limit for each command, below the container's memory limit. */
    private readonly processMemoryKiB: number,
    private readonly onDestroyed: (sandbox: DockerSandbox) => void,
  ) {
    this.baseSha = baseSha;
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  /** Registers a cleanup (e.g. the wall-clock timer) that runs once at destroy. */
  addDisposer(dispose: () => void): void {
    this.disposers.push(dispose);
  }

  async exec(opts: ExecOptions): Promise<ExecResult> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const stdout = new CappedOutput(opts.outputCapBytes ?? DEFAULT_OUTPUT_CAP);
    const stderr = new CappedOutput(opts.outputCapBytes ?? DEFAULT_OUTPUT_CAP);
    const pidFile = `/tmp/.dockhand-exec-${randomBytes(6).toString('hex')}`;
    // The command runs as a job with its own process group (set -m) inside a session of its own
    // (setsid). `timeout` kills the job at the deadline from within, needing no new process (a
    // fork bomb that exhausted RLIMIT_NPROC leaves no room for a killer exec). When the job ends,
    // for whatever reason, the wrapper kills what is left of its group and session, so background
    // processes never outlive their command. A process that calls setsid itself escapes that
    // sweep; the host-side backstop and destroy() remain. `ulimit -v` bounds each process's
    // address space so a memory hog fails inside the sandbox (ENOMEM, V8 "out of memory")
    // instead of pushing the gVisor sandbox over its cgroup limit, where the host would kill the
    // whole sandbox.
    const seconds = Math.max(0.1, timeoutMs / 1000).toFixed(3);
    const script = [
      'pidfile=$1; shift; exec 3<&0; set -m 2>/dev/null',
      `timeout -s KILL ${seconds} sh -c 'ulimit -v ${this.processMemoryKiB}; "$@"' sh "$@" <&3 &`,
      'job=$!; echo $$ > "$pidfile"; wait $job; code=$?; exec 3<&-',
      'kill -KILL -- -$job 2>/dev/null; for p in $(pgrep -s $$); do [ "$p" = $$ ] || kill -KILL "$p" 2>/dev/null; done',
      'rm -f "$pidfile"; exit $code',
    ].join('\n');
    const cmd = ['setsid', '-w', 'sh', '-c', script, 'sh', pidFile, ...opts.cmd];
    let timedOut = false;
    const run = this.start(cmd, {
      cwd: opts.cwd === undefined ? WORKSPACE : workspacePath(opts.cwd, 'cwd'),
      env: opts.env,
      stdin: opts.stdin === undefined ? undefined : Buffer.from(opts.stdin),
      onChunk: (chunk, stream) => {
        (stream === 'stdout' ? stdout : stderr).push(chunk);
        opts.onOutput?.(chunk.toString('utf8'), stream);
      },
    });
    let aborted = false;
    const kill = async (reason: 'timeout' | 'abort'): Promise<void> => {
      if (reason === 'timeout') timedOut = true;
      else aborted = true;
      await this.killTree(pidFile);
      await Promise.race([run.done, delay(KILL_GRACE_MS)]);
      run.abort();
    };
    const timer = setTimeout(() => void kill('timeout'), timeoutMs + BACKSTOP_MS);
    const onAbort = (): void => void kill('abort');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) void kill('abort');
    let exitCode: number;
    try {
      exitCode = await run.exitCode;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
    const durationMs = Date.now() - started;
    if (!aborted && durationMs >= timeoutMs && exitCode !== 0) timedOut = true;
    return {
      // 124 is GNU timeout's convention for "killed at the deadline".
      exitCode: timedOut ? 124 : exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
      truncated: stdout.truncated || stderr.truncated,
      timedOut,
      durationMs,
    };
  }

  async readFile(path: string): Promise<Buffer> {
    workspacePath(path);
    const result = await this.raw(['sh', '-c', `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; exec cat -- "$resolved"`, '_', path]);
    this.checkFileResult(result, path);
    return result.stdout;
  }

  async writeFile(path: string, content: string | Buffer): Promise<void> {
    workspacePath(path);
    const script = `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; mkdir -p -- "$(dirname -- "$resolved")" && exec cat > "$resolved"`;
    const result = await this.raw(['sh', '-c', script, '_', path], { stdin: Buffer.isBuffer(content) ? content : Buffer.from(content) });
    this.checkFileResult(result, path);
  }

  async listFiles(dir = '.', options: ListOptions = {}): Promise<FileEntry[]> {
    workspacePath(dir, 'dir');
    const limit = options.limit ?? 5_000;
    const depth = options.recursive ? '' : '-maxdepth 1';
    // %P is the path below the listed directory; NUL-separated so any file name survives.
    const script =
      `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; ` +
      `[ -d "$resolved" ] || { echo "not a directory" >&2; exit 4; }; ` +
      `find "$resolved" -mindepth 1 ${depth} \\( -name .git -o -name node_modules \\) -prune -o -printf '%y\\t%s\\t%P\\0' | head -z -n ${limit + 1}`;
    const result = await this.raw(['sh', '-c', script, '_', dir]);
    this.checkFileResult(result, dir, 'dir');
    const prefix = workspacePath(dir, 'dir').slice(WORKSPACE.length + 1);
    const entries: FileEntry[] = [];
    for (const record of result.stdout.toString('utf8').split('\0')) {
      if (record === '') continue;
      const [kind, size, name] = record.split('\t');
      if (kind === undefined || size === undefined || name === undefined) continue;
      const type = kind === 'd' ? 'dir' : kind === 'l' ? 'symlink' : 'file';
      entries.push({ path: prefix ? `${prefix}/${name}` : name, type, size: Number(size) });
    }
    return entries.slice(0, limit).sort((a, b) => a.path.localeCompare(b.path));
  }

  /**
   * The workspace against baseSha, tracked and untracked files, ignored files left out. A throwaway
   * index keeps the sandbox's own git index (which the agent may be using) untouched.
   */
  async diff(): Promise<string> {
    const script =
      'set -e; export GIT_INDEX_FILE=$(mktemp /tmp/.dockhand-index.XXXXXX); trap \'rm -f "$GIT_INDEX_FILE"\' EXIT; ' +
      'git read-tree "$0"; git add -A .; git diff --cached --binary --no-color --no-ext-diff "$0"';
    const result = await this.raw(['sh', '-c', script, this.baseSha]);
    if (result.exitCode !== 0) {
      throw new DockhandError('internal', `git diff in sandbox ${this.id} failed: ${result.stderr.toString('utf8').trim()}`);
    }
    return result.stdout.toString('utf8');
  }

  /** Returns HEAD and whether the tree is clean (tracked and untracked, ignored files aside). */
  async workspaceState(): Promise<{ head: string; clean: boolean; status: string }> {
    const result = await this.raw(['sh', '-c', 'git rev-parse HEAD && git status --porcelain --untracked-files=all']);
    const [head = '', ...rest] = result.stdout.toString('utf8').split('\n');
    const status = rest.join('\n').trim();
    return { head: head.trim(), clean: result.exitCode === 0 && status === '', status };
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const dispose of this.disposers.splice(0)) dispose();
    this.onDestroyed(this);
    try {
      // v: the anonymous /workspace volume goes with the container.
      await this.container.remove({ force: true, v: true });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** A short helper command (file ops, git), collected in full, not capped. */
  async raw(cmd: string[], options: { stdin?: Buffer; user?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RawResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const run = this.start(cmd, {
      cwd: WORKSPACE,
      env: options.env,
      stdin: options.stdin,
      user: options.user,
      onChunk: (chunk, stream) => (stream === 'stdout' ? out : err).push(chunk),
    });
    const timer = setTimeout(() => run.abort(), options.timeoutMs ?? 60_000);
    try {
      const exitCode = await run.exitCode;
      return { exitCode, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  private async killTree(pidFile: string): Promise<void> {
    // The pid file holds the wrapper's pid, which is the session id of everything the command started.
    const script = 'p=$(cat "$0" 2>/dev/null) || exit 0; pkill -KILL -s "$p" 2>/dev/null; rm -f "$0"; exit 0';
    await this.raw(['sh', '-c', script, pidFile], { timeoutMs: 10_000 }).catch(() => undefined);
  }

  private checkFileResult(result: RawResult, path: string, field = 'path'): void {
    if (result.exitCode === 0) return;
    const message = result.stderr.toString('utf8').trim();
    if (result.exitCode === 3) throw pathError(path, field, 'resolves outside the workspace (symlink)');
    if (/No such file/i.test(message)) throw new DockhandError('not_found', `${field} "${path}" does not exist in the workspace`, { field });
    if (/Is a directory/i.test(message)) throw pathError(path, field, 'is a directory');
    if (result.exitCode === 4) throw pathError(path, field, 'is not a directory');
    throw new DockhandError('bad_request', `${field} "${path}": ${message || `exit ${result.exitCode}`}`, { field });
  }

  private start(
    cmd: string[],
    options: {
      cwd: string;
      env?: Record<string, string> | undefined;
      stdin?: Buffer | undefined;
      user?: string | undefined;
      onChunk: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
    },
  ): { exitCode: Promise<number>; done: Promise<void>; abort: () => void } {
    if (this.destroyed) {
      const gone = Promise.reject(new DockhandError('sandbox_unavailable', `sandbox ${this.id} was destroyed`));
      gone.catch(() => undefined);
      return { exitCode: gone.then(() => -1), done: Promise.resolve(), abort: () => undefined };
    }
    let stream: Duplex | undefined;
    let aborted = false;
    let markDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (markDone = resolve));
    const exitCode = (async (): Promise<number> => {
      try {
        const exec = await this.container.exec({
          Cmd: cmd,
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: options.stdin !== undefined,
          User: options.user ?? SANDBOX_USER,
          WorkingDir: options.cwd,
          Env: sandboxEnvironment({ ...this.baseEnv, ...options.env }),
        });
        stream = await exec.start({ hijack: true, stdin: options.stdin !== undefined });
        const demuxer = new DockerStreamDemuxer(options.onChunk);
        const ended = new Promise<void>((resolve, reject) => {
          stream?.on('data', (data: Buffer) => demuxer.push(data));
          stream?.on('end', () => resolve());
          stream?.on('close', () => resolve());
          stream?.on('error', (error) => (aborted ? resolve() : reject(error)));
        });
        if (aborted) stream.destroy();
        if (options.stdin !== undefined) stream.end(options.stdin);
        await ended;
        markDone();
        // The stream can end a moment before the engine records the exit; poll briefly.
        for (let attempt = 0; ; attempt += 1) {
          const info = await exec.inspect();
          if (!info.Running) return info.ExitCode ?? -1;
          if (aborted || attempt >= 200) return -1;
          await delay(10);
        }
      } catch (error) {
        markDone();
        if (this.destroyed || isNotFound(error)) {
          throw new DockhandError('sandbox_unavailable', `sandbox ${this.id} is gone`, { cause: error });
        }
        throw error;
      }
    })();
    return {
      exitCode,
      done,
      abort: () => {
        aborted = true;
        stream?.destroy();
      },
    };
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 404;
}
