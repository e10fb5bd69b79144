import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { EnvironmentRecipe } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { ChannelClosed, ChannelFailure, openDockerChannel, type SandboxChannel } from './channel';
import { delay, describeCommand, describeExit, isNotFound, SANDBOX_USER, startDockerExec, type Started, type StartOptions } from './docker-exec';
import { sliceLines, type LineRequest, type LineSlice } from './lines';
import { sandboxEnvironment } from './environment';
import { INSTALL_MADE_FUNCTION, INSTALL_MADE_SEPARATOR, installMadeSet, withoutInstallMade, WORKSPACE_DIFF_SCRIPT } from './install-made';
import { CappedOutput } from './output';
import { RESOLVE_INSIDE_WORKSPACE, WORKSPACE, pathError, workspacePath } from './paths';
import { diskFullNote } from './workspace-disk';
import type { ContentAnswer, ContentQuery, ExecOptions, ExecResult, FileEntry, Sandbox, SandboxLoss } from './types';

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_OUTPUT_CAP = 64 * 1024;
/** How long a killed command's stream may take to close before we stop waiting for it. */
const KILL_GRACE_MS = 2_000;
/** Extra time the in-sandbox `timeout` gets before the host kills the tree itself. */
const BACKSTOP_MS = 1_500;
/** After the command channel failed to start, calls use docker exec this long before it is tried again. */
const CHANNEL_RETRY_MS = 5_000;
const CHANNEL_LOST_NOTE = '\n[dockhand: the sandbox command channel stopped while this command ran; its exit status is unknown]\n';
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
 * One running sandbox container. Every command runs as uid 1000; file operations and commands go
 * through the sandbox's command channel (one long-lived `docker exec` running a small Node program,
 * see channel.ts) when it is up, and through a `docker exec` each otherwise (one round trip each,
 * binary-safe through the multiplexed stream). Both paths run the same wrapper and the same path
 * checks. The channel starts on first use (that call and any while it starts take the exec path)
 * and again after it dies; calls in flight when it dies are retried by exec when nothing ran yet.
 */
export { describeExit, isNotFound } from './docker-exec';

export class DockerSandbox implements Sandbox {
  private destroyed = false;
  private loss: SandboxLoss | undefined;
  private readonly lossListeners: Array<(loss: SandboxLoss) => void> = [];
  /** Commands running now (for the loss report) and how to fail each at once when the sandbox is lost. */
  private readonly running = new Map<number, { command?: string; fail?: (error: Error) => void }>();
  private nextRun = 1;
  private readonly disposers: Array<() => void> = [];
  private readonly finalizers: Array<() => Promise<void>> = [];
  /** The workspace disk's size (`workspace-disk.ts`), when it has one: a full disk's note names it. */
  diskLimitMiB: number | undefined;
  private channel: SandboxChannel | undefined;
  private channelStarting = false;
  private channelRetryAt = 0;
  /** How calls were served, and how often the channel was started; read by tests and benchmarks. */
  readonly transport = { channel: 0, exec: 0, channelStarts: 0, channelPid: 0, residentServed: 0, residentDeclined: 0, lastDeclined: '' };
  baseSha: string;
  /** The snapshot's environment recipe (set by the driver from the snapshot's labels). */
  environment?: EnvironmentRecipe;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    readonly id: string,
    readonly image: string,
    baseSha: string,
    private readonly baseEnv: Record<string, string>,
    /** The container's memory limit (the channel's memory guard keeps commands below it). */
    private readonly memoryBytes: number,
    private readonly onDestroyed: (sandbox: DockerSandbox) => void,
  ) {
    this.baseSha = baseSha;
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  /** Why the sandbox stopped working, once it has (container exited or removed, no answer). */
  get lost(): SandboxLoss | undefined {
    return this.loss;
  }

  onLost(listener: (loss: SandboxLoss) => void): void {
    if (this.loss) listener(this.loss);
    else this.lossListeners.push(listener);
  }

  /**
   * The sandbox cannot be used any more (its container exited, was removed, or stopped answering):
   * every call in flight fails now with a clear error, and so does every later one. Not called for
   * our own destroy().
   */
  markLost(reason: string): void {
    if (this.loss || this.destroyed) return;
    const running = [...this.running.values()].flatMap((entry) => (entry.command ? [entry.command] : []));
    this.loss = { reason, at: new Date().toISOString(), running };
    this.channel?.close();
    const error = this.lostError();
    for (const entry of [...this.running.values()]) entry.fail?.(error);
    for (const listener of this.lossListeners.splice(0)) listener(this.loss);
  }

  private lostError(): DockhandError {
    const loss = this.loss;
    const running = loss && loss.running.length > 0 ? ` It was running: ${loss.running.join('; ')}.` : '';
    return new DockhandError('sandbox_unavailable', `The sandbox was lost: ${loss?.reason ?? 'it stopped'}.${running} Nothing more can run in it; the call did not complete.`);
  }

  /** Registers a cleanup (e.g. the wall-clock timer) that runs once at destroy. */
  addDisposer(dispose: () => void): void {
    this.disposers.push(dispose);
  }

  /** Registers a cleanup that runs once after the container is removed (its workspace disk). */
  addFinalizer(finalize: () => Promise<void>): void {
    this.finalizers.push(finalize);
  }

  async exec(opts: ExecOptions): Promise<ExecResult> {
    if (this.loss) throw this.lostError();
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
    // sweep; the host-side backstop and destroy() remain. No address-space cap (ulimit -v breaks
    // V8's WebAssembly reservations): memory is bounded by the container's cgroup limit, and
    // through the channel its memory guard kills the biggest command before that limit is hit.
    // Through the channel, the channel does the rest itself too (setsid, its own deadline timer
    // and a sweep of the session through /proc), sparing the wrapper's processes; the pid file
    // gets the session id there too, for the host-side backstop.
    const seconds = Math.max(0.1, timeoutMs / 1000).toFixed(3);
    const script = [
      'pidfile=$1; shift; exec 3<&0; set -m 2>/dev/null',
      `timeout -s KILL ${seconds} "$@" <&3 &`,
      'job=$!; echo $$ > "$pidfile"; wait $job; code=$?; exec 3<&-',
      // Kill the group (timeout's, which it made itself) again until it is empty: gVisor does not
      // make a group kill atomic against concurrent forks, so a fork bomb can leave survivors.
      // Builtins only, as the process limit may be used up; dash's kill takes `-PGID`, not `-- -PGID`.
      'n=0; while kill -KILL -$job 2>/dev/null && [ $n -lt 5000 ]; do n=$((n+1)); done',
      'for p in $(pgrep -s $$); do [ "$p" = $$ ] || kill -KILL "$p" 2>/dev/null; done',
      'rm -f "$pidfile"; exit $code',
    ].join('\n');
    const cmd = ['setsid', '-w', 'sh', '-c', script, 'sh', pidFile, ...opts.cmd];
    let timedOut = false;
    const run = this.startCommand(cmd, {
      cwd: opts.cwd === undefined ? WORKSPACE : workspacePath(opts.cwd, 'cwd'),
      env: opts.env,
      stdin: opts.stdin === undefined ? undefined : Buffer.from(opts.stdin),
      onChunk: (chunk, stream) => {
        (stream === 'stdout' ? stdout : stderr).push(chunk);
        opts.onOutput?.(chunk.toString('utf8'), stream);
      },
      // Whatever the command left running dies with it, as on the exec path.
      onLost: () => void this.killTree(pidFile),
      // Through the channel the same limits apply without the wrapper's extra processes.
      direct: { cmd: opts.cmd, timeoutMs, memoryLimitBytes: this.memoryBytes, pidFile },
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
    const runId = this.nextRun++;
    this.running.set(runId, { command: describeCommand(opts.cmd) });
    let exitCode: number;
    try {
      try {
        exitCode = await run.exitCode;
      } finally {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      }
      // Still listed as running while the loss is judged, so a loss report names this command.
      if (!this.loss && (exitCode === -1 || exitCode >= 128)) {
        // The host cgroup's memory limit (or the host's process limit, or a kill of the container)
        // kills the whole gVisor sandbox, not one process: the sandbox is lost, and the call fails
        // saying so. The command's stream can end a moment before the engine reports the container
        // stopped, so the state is read again for a short while before the exit code is believed.
        for (let attempt = 0; attempt < 10 && !this.loss; attempt += 1) {
          const state = await this.container.inspect().then((info) => info.State, (error: unknown) => (isNotFound(error) ? { Running: false, OOMKilled: false, ExitCode: -1 } : undefined));
          if (state && !state.Running) {
            this.markLost(describeExit(state));
            break;
          }
          if (!state || (exitCode !== -1 && exitCode !== 137)) break;
          await delay(200);
        }
      }
      if (this.loss) throw this.lostError();
    } finally {
      this.running.delete(runId);
    }
    if (this.diskLimitMiB !== undefined && /No space left on device/i.test(stderr.text() + stdout.text())) stderr.push(Buffer.from(diskFullNote(this.diskLimitMiB)));
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
    const served = await this.viaChannel((channel) => channel.readFile(path), path);
    if (served) return served.value;
    const result = await this.raw(['sh', '-c', `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; exec cat -- "$resolved"`, '_', path]);
    this.checkFileResult(result, path);
    return result.stdout;
  }

  /** A slice of a text file's lines (read_file): through the channel only the slice crosses. */
  async readLines(path: string, request: LineRequest): Promise<LineSlice> {
    workspacePath(path);
    const served = await this.viaChannel((channel) => channel.readLines(path, request), path);
    if (served) return served.value;
    // Without the channel: the size first, as the channel does, so a 200 MB file is answered at
    // once by its size instead of being copied out of the sandbox to be refused.
    const sized = await this.raw(['sh', '-c', `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; exec stat -L -c %s -- "$resolved"`, '_', path]);
    this.checkFileResult(sized, path);
    const bytes = Number(sized.stdout.toString('utf8').trim());
    if (Number.isFinite(bytes) && bytes > request.maxBytes) return { bytes, binary: false, total: 0, lines: [] };
    return sliceLines(await this.readFile(path), request);
  }

  async writeFile(path: string, content: string | Buffer): Promise<void> {
    workspacePath(path);
    const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content);
    if (await this.viaChannel((channel) => channel.writeFile(path, bytes), path)) return;
    const script = `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; mkdir -p -- "$(dirname -- "$resolved")" && exec cat > "$resolved"`;
    const result = await this.raw(['sh', '-c', script, '_', path], { stdin: bytes });
    this.checkFileResult(result, path);
  }

  /**
   * Resident search through the channel (channel-resident.ts): the workspace text it keeps in
   * memory is bounded by an eighth of the sandbox's memory, at most 512 MiB. Undefined when the
   * channel is not up or declines; the search tool then runs ripgrep.
   */
  async searchContent(query: ContentQuery): Promise<ContentAnswer | undefined> {
    workspacePath(query.path);
    const served = await this.viaChannel((channel) => channel.search(query, this.residentBudgetBytes), query.path);
    return this.residentAnswer(served);
  }

  /** ctags lines for one file from the channel's resident ctags, or undefined (run ctags). */
  async symbolsOf(path: string): Promise<string | undefined> {
    workspacePath(path);
    const served = await this.viaChannel((channel) => channel.tags(path), path);
    return this.residentAnswer(served);
  }

  private residentAnswer<T>(served: { value: T | { declined: string } } | undefined): T | undefined {
    if (!served) return undefined;
    const value = served.value;
    if (typeof value === 'object' && value !== null && 'declined' in value) {
      this.transport.residentDeclined += 1;
      this.transport.lastDeclined = (value as { declined: string }).declined;
      return undefined;
    }
    this.transport.residentServed += 1;
    return value as T;
  }

  private get residentBudgetBytes(): number {
    return Math.min(512 * 1024 * 1024, Math.floor(this.memoryBytes / 8));
  }

  async listFiles(dir = '.', options: ListOptions = {}): Promise<FileEntry[]> {
    workspacePath(dir, 'dir');
    const limit = options.limit ?? 5_000;
    const prefix = workspacePath(dir, 'dir').slice(WORKSPACE.length + 1);
    const served = await this.viaChannel((channel) => channel.listFiles(dir, options.recursive ?? false, limit), dir, 'dir');
    const records = served ? served.value : await this.listByExec(dir, options.recursive ?? false, limit);
    const entries: FileEntry[] = [];
    for (const [kind, size, name] of records) {
      const type = kind === 'd' ? 'dir' : kind === 'l' ? 'symlink' : 'file';
      entries.push({ path: prefix ? `${prefix}/${name}` : name, type, size });
    }
    return entries.slice(0, limit).sort((a, b) => a.path.localeCompare(b.path));
  }

  private async listByExec(dir: string, recursive: boolean, limit: number): Promise<Array<[string, number, string]>> {
    const depth = recursive ? '' : '-maxdepth 1';
    // %P is the path below the listed directory; NUL-separated so any file name survives.
    const script =
      `cd ${WORKSPACE} && ${RESOLVE_INSIDE_WORKSPACE}; ` +
      `[ -d "$resolved" ] || { echo "not a directory" >&2; exit 4; }; ` +
      `find "$resolved" -mindepth 1 ${depth} \\( -name .git -o -name node_modules \\) -prune -o -printf '%y\\t%s\\t%P\\0' | head -z -n ${limit + 1}`;
    const result = await this.raw(['sh', '-c', script, '_', dir]);
    this.checkFileResult(result, dir, 'dir');
    const records: Array<[string, number, string]> = [];
    for (const record of result.stdout.toString('utf8').split('\0')) {
      if (record === '') continue;
      const [kind, size, name] = record.split('\t');
      if (kind === undefined || size === undefined || name === undefined) continue;
      records.push([kind, Number(size), name]);
    }
    return records;
  }

  /**
   * The workspace against baseSha, tracked and untracked files, ignored files left out, and so are
   * the paths the snapshot's install made that still hold what it made (install-made.ts). A
   * throwaway index keeps the sandbox's own git index (which the agent may be using) untouched.
   */
  async diff(): Promise<string> {
    const result = await this.raw(['bash', '-c', WORKSPACE_DIFF_SCRIPT, this.baseSha]);
    if (result.exitCode !== 0) {
      throw new DockhandError('internal', `git diff in sandbox ${this.id} failed: ${result.stderr.toString('utf8').trim()}`);
    }
    return result.stdout.toString('utf8');
  }

  /**
   * Returns HEAD and whether the tree is clean (tracked and untracked, ignored files aside, and
   * the install's own changes while they hold what it made).
   */
  /** HEAD, whether the tree is clean, its status; `error`: what git said when it could not read HEAD. */
  async workspaceState(): Promise<{ head: string; clean: boolean; status: string; error?: string }> {
    const script = `${INSTALL_MADE_FUNCTION}\ngit rev-parse HEAD && git status --porcelain -z --untracked-files=all --no-renames && printf '\\0${INSTALL_MADE_SEPARATOR}\\0' && dockhand_install_made`;
    const result = await this.raw(['bash', '-c', script]);
    const output = result.stdout.toString('utf8');
    const newline = output.indexOf('\n');
    const head = newline < 0 ? output : output.slice(0, newline);
    const [entries = '', made = ''] = output.slice(newline + 1).split(`\0${INSTALL_MADE_SEPARATOR}\0`);
    const status = withoutInstallMade(entries, installMadeSet(made));
    const error = head.trim() === '' ? result.stderr.toString('utf8').trim().slice(0, 2000) || `git exited with ${result.exitCode}` : undefined;
    return { head: head.trim(), clean: result.exitCode === 0 && status === '', status, ...(error ? { error } : {}) };
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    this.channel?.close();
    for (const dispose of this.disposers.splice(0)) dispose();
    this.onDestroyed(this);
    try {
      // v: also any volume an image declares; the workspace itself is in the container layer.
      await this.container.remove({ force: true, v: true });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    } finally {
      for (const finalize of this.finalizers.splice(0)) await finalize().catch(() => undefined);
    }
  }

  /** A short helper command (file ops, git), collected in full, not capped. */
  async raw(
    cmd: string[],
    options: { stdin?: Buffer; user?: string; timeoutMs?: number; env?: Record<string, string>; onOutput?: (chunk: Buffer, stream: 'stdout' | 'stderr') => void } = {},
  ): Promise<RawResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const run = this.start(cmd, {
      cwd: WORKSPACE,
      env: options.env,
      stdin: options.stdin,
      user: options.user,
      onChunk: (chunk, stream) => {
        (stream === 'stdout' ? out : err).push(chunk);
        options.onOutput?.(chunk, stream);
      },
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
    const full = this.diskLimitMiB !== undefined && /ENOSPC|No space left/i.test(message) ? ` ${diskFullNote(this.diskLimitMiB).trim()}` : '';
    throw new DockhandError('bad_request', `${field} "${path}": ${message || `exit ${result.exitCode}`}${full}`, { field });
  }

  /** The channel when it is up; otherwise undefined, starting it in the background unless it just failed to start. */
  private usableChannel(): SandboxChannel | undefined {
    if (this.destroyed) return undefined;
    if (this.channel && !this.channel.isClosed) return this.channel;
    if (!this.channelStarting && Date.now() >= this.channelRetryAt) void this.startChannel();
    return undefined;
  }

  private async startChannel(): Promise<void> {
    this.channelStarting = true;
    this.transport.channelStarts += 1;
    try {
      // Room for the resident search's text (strings of two-byte characters at worst) besides the program itself.
      const heapMiB = Math.ceil((this.residentBudgetBytes * 2) / 1048576) + 128;
      const { channel, pid } = await openDockerChannel(this.container, { user: SANDBOX_USER, env: sandboxEnvironment(this.baseEnv), root: WORKSPACE, heapMiB });
      if (this.destroyed) {
        channel.close();
        return;
      }
      this.channel = channel;
      this.transport.channelPid = pid;
      // The agent searches early; the read of the workspace overlaps the model's first turn.
      channel.warm(this.residentBudgetBytes).catch(() => undefined);
      // A dead channel is started again by the next call (which itself takes the exec path).
      channel.onClose(() => {
        if (this.channel === channel) this.channel = undefined;
      });
    } catch {
      this.channelRetryAt = Date.now() + CHANNEL_RETRY_MS;
    } finally {
      this.channelStarting = false;
    }
  }

  /**
   * A file operation through the channel: its value, a thrown path error mapped exactly as the exec
   * path maps it, or undefined when the channel is not up or closed before answering (the caller
   * then uses exec; file operations are safe to repeat).
   */
  private async viaChannel<T>(operation: (channel: SandboxChannel) => Promise<T>, path: string, field = 'path'): Promise<{ value: T } | undefined> {
    const channel = this.usableChannel();
    if (!channel) {
      this.transport.exec += 1;
      return undefined;
    }
    try {
      const value = await operation(channel);
      this.transport.channel += 1;
      return { value };
    } catch (error) {
      if (error instanceof ChannelClosed) {
        this.transport.exec += 1;
        return undefined;
      }
      if (!(error instanceof ChannelFailure)) throw error;
      this.transport.channel += 1;
      this.checkFileResult({ exitCode: error.exitCode || 1, stdout: Buffer.alloc(0), stderr: Buffer.from(error.stderr) }, path, field);
      throw error;
    }
  }

  /**
   * A command through the channel when it is up, else through docker exec. A command the channel
   * could not start (it closed first, or spawn failed) runs by exec instead: nothing ran yet. One
   * whose channel died while it ran is not repeated: its result says so, with exit code -1.
   */
  private startCommand(
    cmd: string[],
    options: StartOptions & { onLost?: () => void; direct?: { cmd: string[]; timeoutMs: number; memoryLimitBytes: number; pidFile: string } },
  ): Started {
    const channel = options.user === undefined ? this.usableChannel() : undefined;
    if (!channel) {
      this.transport.exec += 1;
      return this.start(cmd, options);
    }
    const env = Object.fromEntries(
      sandboxEnvironment({ ...this.baseEnv, ...options.env }).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
    const { direct } = options;
    const run = channel.run(
      direct ? { cmd: direct.cmd, cwd: options.cwd, env, stdin: options.stdin, direct: { timeoutMs: direct.timeoutMs, memoryLimitBytes: direct.memoryLimitBytes, pidFile: direct.pidFile } } : { cmd, cwd: options.cwd, env, stdin: options.stdin },
      options.onChunk,
    );
    let fallback: Started | undefined;
    let aborted = false;
    const exitCode = (async (): Promise<number> => {
      try {
        await run.spawned;
      } catch (error) {
        if (!(error instanceof ChannelFailure || error instanceof ChannelClosed) || aborted) throw error;
        this.transport.exec += 1;
        fallback = this.start(cmd, options);
        return fallback.exitCode;
      }
      this.transport.channel += 1;
      try {
        return await run.exitCode;
      } catch (error) {
        if (!(error instanceof ChannelClosed)) throw error;
        options.onChunk(Buffer.from(CHANNEL_LOST_NOTE), 'stderr');
        options.onLost?.();
        return -1;
      }
    })();
    const done = exitCode.then(
      () => fallback?.done,
      () => undefined,
    );
    return {
      exitCode,
      done,
      abort: () => {
        aborted = true;
        run.cancel();
        fallback?.abort();
      },
    };
  }

  /** A docker exec of `cmd` (docker-exec.ts), failed at once when the sandbox is gone or lost. */
  private start(cmd: string[], options: StartOptions): Started {
    return startDockerExec(
      {
        container: this.container,
        env: (extra) => sandboxEnvironment({ ...this.baseEnv, ...extra }),
        unavailable: () => (this.loss ? this.lostError() : this.destroyed ? new DockhandError('sandbox_unavailable', `sandbox ${this.id} was destroyed`) : undefined),
        gone: (cause) => (this.loss ? this.lostError() : this.destroyed || isNotFound(cause) ? new DockhandError('sandbox_unavailable', `sandbox ${this.id} is gone`, { cause }) : undefined),
        markLost: (reason) => this.markLost(reason),
        lostError: () => this.lostError(),
        track: (fail) => {
          const runId = this.nextRun++;
          this.running.set(runId, { fail });
          return () => this.running.delete(runId);
        },
      },
      cmd,
      options,
    );
  }
}
