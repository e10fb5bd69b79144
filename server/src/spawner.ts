import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { z } from 'zod';
import { SPAWNER_PROGRAM } from './spawner-program';

/*
 * Child processes started by a small process of their own, not by the server.
 *
 * Node's `child_process.spawn` forks the calling process, and the fork copies its page tables
 * while the event loop waits: the call blocks for a time that grows with the process's memory
 * (nodejs/node#14917). Measured on this project's machines: 2.5 ms at 47 MB, 48 ms at 257 MB,
 * 168 ms at 1.1 GB, several times that under load. A worker holding 30 tasks runs ~12 git children
 * per task (base files, the push, the PR), an API replica two per submission, so forks were the
 * largest single cost in the fleet's CPU profiles and the main source of its event-loop stalls:
 * every live event, heartbeat and claim of the process waited behind them.
 *
 * So every server-side child goes through one spawner per process: a tiny Node program
 * (`spawner-program.ts`, ~40 MB) started once and talked to over an IPC channel. The server sends
 * a message and gets the output back as messages; the fork happens in the small process. What it
 * keeps from a direct spawn: its own process group per child (`detached`) killed as a whole on
 * timeout, abort or shutdown; stdin given whole; stdout and stderr as streams; exit code and
 * signal. What it does not do: stream stdin, or pass file descriptors or a terminal.
 *
 * If the spawner dies, the children it was running fail with an error saying so and the next
 * spawn starts a new one. Its children are started in their own process groups, so they do not
 * die with it; they do die when the channel to the server closes (the server exited).
 *
 * This module may be imported by every layer of `server/` (like `git-child.ts`).
 */

export interface SpawnOptions {
  cwd?: string;
  /** The child's whole environment (nothing of the server's is added). */
  env: Record<string, string>;
  /** Written to the child's stdin, which is then closed; without it stdin is /dev/null. */
  stdin?: Buffer | string;
  /** Its own process group, so a kill reaches its children too. Default true. */
  detached?: boolean;
  /**
   * How much lower the child's CPU priority is than the server's (its nice value's increment,
   * 0–19). Default CHILD_NICE: git is bulk work, and a burst of pushes must not delay the live
   * events, heartbeats and claims of the processes beside it.
   */
  nice?: number;
}

/**
 * The default `nice` of a child. Server-side children are git: commits, pushes and fetches whose
 * latency nobody watches. On 2 shared cores, `npm run bench:scale`'s burst of ~10 pushes a second
 * (git ~120 ms of CPU each, receive-pack included) starved the workers' event writes and the API
 * replicas' fan-out: its p99 went 632 → 160 ms with the children at nice 10. The children still
 * get every idle cycle; they yield only when the server has work.
 */
export const CHILD_NICE = 10;

/** A child started by the spawner: 'spawn', 'error' (Error with `code`) and 'close' (code, signal) events. */
export interface SpawnedChild extends EventEmitter {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Set once the child has started ('spawn'). */
  readonly pid: number | undefined;
  /** Signals the child's process group (the child alone when not detached). */
  kill(signal?: NodeJS.Signals): void;
}

const Incoming = z.discriminatedUnion('op', [
  z.object({ op: z.literal('spawned'), id: z.number(), pid: z.number() }),
  z.object({ op: z.literal('stdout'), id: z.number(), data: z.instanceof(Uint8Array) }),
  z.object({ op: z.literal('stderr'), id: z.number(), data: z.instanceof(Uint8Array) }),
  z.object({ op: z.literal('error'), id: z.number(), message: z.string(), code: z.string().nullish() }),
  z.object({ op: z.literal('close'), id: z.number(), code: z.number().nullable(), signal: z.string().nullable() }),
]);

class BrokeredChild extends EventEmitter implements SpawnedChild {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  pid: number | undefined;
  closed = false;

  constructor(private readonly signalChild: (signal: NodeJS.Signals) => void) {
    super();
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (!this.closed) this.signalChild(signal);
  }

  /** An 'error' nobody listens to is dropped, not thrown: the 'close' that follows tells the end. */
  fail(error: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  close(code: number | null, signal: string | null): void {
    if (this.closed) return;
    this.closed = true;
    this.stdout.end();
    this.stderr.end();
    // 'close' after the streams' last data, as with a ChildProcess.
    setImmediate(() => this.emit('close', code, signal));
  }
}

/** One spawner process and the children it runs for this process. */
export class Spawner {
  private process: ChildProcess | undefined;
  private readonly children = new Map<number, BrokeredChild>();
  private nextId = 1;

  /** How many children are running now. */
  get running(): number {
    return this.children.size;
  }

  spawn(command: string, args: string[], options: SpawnOptions): SpawnedChild {
    const broker = this.ensureProcess();
    const id = this.nextId++;
    const child = new BrokeredChild((signal) => {
      if (broker.connected) broker.send({ op: 'kill', id, signal });
    });
    this.children.set(id, child);
    // The channel keeps this process alive only while a child runs (a CLI waiting on git must not exit).
    broker.channel?.ref();
    broker.send({
      op: 'spawn', id, command, args, cwd: options.cwd, env: options.env,
      stdin: options.stdin === undefined ? undefined : Buffer.from(options.stdin),
      detached: options.detached ?? true,
      nice: Math.max(0, Math.min(19, options.nice ?? CHILD_NICE)),
    });
    return child;
  }

  /** Stops the spawner process (its children's groups are killed as its channel closes). */
  close(): void {
    const broker = this.process;
    this.process = undefined;
    if (broker?.connected) broker.disconnect();
    this.failAll('the server is shutting down');
  }

  private ensureProcess(): ChildProcess {
    if (this.process?.connected) return this.process;
    const broker = spawn(process.execPath, ['--max-old-space-size=128', '-e', SPAWNER_PROGRAM], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    broker.unref();
    broker.channel?.unref();
    broker.on('message', (message: unknown) => this.onMessage(message));
    broker.once('exit', (code, signal) => {
      if (this.process === broker) this.process = undefined;
      this.failAll(`the spawner process exited (${signal ?? `code ${code}`})`);
    });
    broker.on('error', () => undefined);
    this.process = broker;
    return broker;
  }

  private onMessage(raw: unknown): void {
    const parsed = Incoming.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    const child = this.children.get(message.id);
    if (!child) return;
    switch (message.op) {
      case 'spawned':
        child.pid = message.pid;
        child.emit('spawn');
        break;
      case 'stdout':
        child.stdout.write(Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength));
        break;
      case 'stderr':
        child.stderr.write(Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength));
        break;
      case 'error':
        child.fail(Object.assign(new Error(message.message), message.code ? { code: message.code } : {}));
        break;
      case 'close':
        this.finish(message.id, child);
        child.close(message.code, message.signal);
        break;
    }
  }

  private finish(id: number, child: BrokeredChild): void {
    if (this.children.get(id) !== child) return;
    this.children.delete(id);
    if (this.children.size === 0) this.process?.channel?.unref();
  }

  private failAll(why: string): void {
    for (const [id, child] of [...this.children]) {
      this.finish(id, child);
      child.fail(Object.assign(new Error(why), { code: 'ESPAWNER' }));
      child.close(null, null);
    }
  }
}

/** The process's spawner, started on first use. */
export const spawner = new Spawner();

export interface RunChildOptions extends SpawnOptions {
  /** Killed (with its process group) after this long. */
  timeoutMs?: number;
  /** Killed after this long without output (simple-git's "block" timeout). */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  /** Killed once stdout passes this many bytes. Default 64 MiB. */
  maxBuffer?: number;
  /** Killed when this fires (shutdown); returns the unregister function. */
  onKillAll?: (kill: () => void) => () => void;
  /** Told each chunk of stderr as it arrives (a fetch's progress), before the 16 KiB cap. */
  onStderr?: (chunk: string) => void;
}

export interface ChildResult {
  /** The exit code; null when killed by a signal or never started. */
  code: number | null;
  stdout: Buffer;
  stderr: string;
  /** Why it was killed (timeout, abort, output limit, shutdown), when it was. */
  killed?: string;
  /** It could not start, or the spawner failed under it. */
  error?: Error;
}

/**
 * Runs a child to its end through the spawner and collects what it printed. Never rejects: the
 * caller maps a non-zero code, a kill or an error to its own failure.
 */
export function runChild(command: string, args: string[], options: RunChildOptions): Promise<ChildResult> {
  return new Promise((resolve) => {
    if (options.signal?.aborted) {
      resolve({ code: null, stdout: Buffer.alloc(0), stderr: '', killed: 'cancelled' });
      return;
    }
    const child = spawner.spawn(command, args, options);
    const maxBuffer = options.maxBuffer ?? 64 * 1024 * 1024;
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let killed: string | undefined;
    let error: Error | undefined;
    const kill = (why: string) => {
      killed ??= why;
      child.kill('SIGKILL');
    };
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => kill(`did not finish within ${Math.round(options.timeoutMs! / 1000)} s`), options.timeoutMs);
    let idle: NodeJS.Timeout | undefined;
    const touch = () => {
      if (options.idleTimeoutMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(() => kill(`printed nothing for ${Math.round(options.idleTimeoutMs! / 1000)} s`), options.idleTimeoutMs);
    };
    touch();
    const onAbort = () => kill('cancelled');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const unregister = options.onKillAll?.(() => kill('the server is shutting down'));
    child.stdout.on('data', (chunk: Buffer) => {
      touch();
      outBytes += chunk.length;
      if (outBytes > maxBuffer) kill('printed more than the output limit');
      else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      touch();
      options.onStderr?.(chunk.toString());
      if (err.length < 16_384) err += chunk.toString();
    });
    child.on('error', (e: Error) => (error ??= e));
    child.once('close', (code: number | null) => {
      clearTimeout(timer);
      clearTimeout(idle);
      options.signal?.removeEventListener('abort', onAbort);
      unregister?.();
      resolve({ code, stdout: Buffer.concat(out), stderr: err, ...(killed ? { killed } : {}), ...(error ? { error } : {}) });
    });
  });
}
