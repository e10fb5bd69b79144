import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { z } from 'zod';
import { CHANNEL_PROGRAM } from './channel-program';
import { DockerStreamDemuxer } from './demux';
import type { LineRequest, LineSlice } from './lines';
import type { ContentAnswer, ContentQuery } from './types';

/*
 * The host side of the in-sandbox command channel: one long-lived `docker exec` per sandbox running
 * CHANNEL_PROGRAM, so a file operation or a short command costs a message round trip instead of a
 * new exec (about 150 ms each under gVisor). Newline-delimited JSON both ways, multiplexed by id:
 *
 *   host → channel  { id, op: 'readFile' | 'readLines' | 'writeFile' | 'listFiles' | 'run' | 'kill'
 *                         | 'search' | 'warm' | 'tags', ... }        (the last three: channel-resident.ts)
 *   channel → host  { type: 'ready', pid }                       once, when it can serve
 *                   { id, type: 'result', ... }                   a file operation's answer
 *                   { id, type: 'error', exitCode, stderr }       shell-like failure (exit 3: escape)
 *                   { id, type: 'spawned', pid }                  a command is running
 *                   { id, type: 'out', stream, data (base64) }    its output, as it comes
 *                   { id, type: 'exit', exitCode }                it ended
 *
 * The channel adds no semantics of its own: commands are given the same wrapper (timeout, process
 * group and session sweep) as the exec path, plus the memory guard, by DockerSandbox.
 */

const Message = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready'), pid: z.number() }),
  z.object({
    type: z.literal('result'),
    id: z.number(),
    data: z.string().optional(),
    entries: z.array(z.tuple([z.string(), z.number(), z.string()])).optional(),
    search: z
      .union([
        z.object({ served: z.literal(true), matches: z.number(), hits: z.array(z.tuple([z.string(), z.number(), z.string(), z.number()])) }),
        z.object({ served: z.literal(false), reason: z.string() }),
      ])
      .optional(),
    tags: z.union([z.object({ served: z.literal(true), output: z.string() }), z.object({ served: z.literal(false), reason: z.string() })]).optional(),
    lines: z.object({ bytes: z.number(), binary: z.boolean(), total: z.number(), lines: z.array(z.tuple([z.string(), z.number()])) }).optional(),
  }),
  z.object({ type: z.literal('error'), id: z.number(), exitCode: z.number(), stderr: z.string() }),
  z.object({ type: z.literal('spawned'), id: z.number(), pid: z.number() }),
  z.object({ type: z.literal('out'), id: z.number(), stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ type: z.literal('exit'), id: z.number(), exitCode: z.number() }),
]);
type Message = z.infer<typeof Message>;

/** A failure reported by the channel in the exec path's terms (exit code and stderr). */
export class ChannelFailure extends Error {
  constructor(
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(stderr);
  }
}

/** The channel stopped before answering. `started` tells whether a command had begun running. */
export class ChannelClosed extends Error {
  constructor(readonly started: boolean) {
    super('the sandbox command channel closed');
  }
}

export interface ChannelRun {
  /** Resolves when the command is running; rejects (ChannelFailure or ChannelClosed) when it never started. */
  spawned: Promise<void>;
  exitCode: Promise<number>;
  /** Kills the command's process group and stops waiting for it (exitCode resolves -1). */
  cancel: () => void;
}

interface Pending {
  onMessage: (message: Message) => void;
  onClose: () => void;
}

export class SandboxChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private buffered: Buffer[] = [];
  private closed = false;
  private readonly closeListeners: Array<() => void> = [];
  readonly ready: Promise<number>;
  private markReady: (pid: number) => void = () => undefined;
  private failReady: (error: Error) => void = () => undefined;

  constructor(private readonly write: (line: string) => void) {
    this.ready = new Promise<number>((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    this.ready.catch(() => undefined);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Bytes from the channel's stdout. */
  push(data: Buffer): void {
    let start = 0;
    for (let newline = data.indexOf(10); newline !== -1; newline = data.indexOf(10, start)) {
      this.buffered.push(data.subarray(start, newline));
      const line = Buffer.concat(this.buffered).toString('utf8');
      this.buffered = [];
      start = newline + 1;
      this.dispatch(line);
    }
    if (start < data.length) this.buffered.push(data.subarray(start));
  }

  /** The transport ended: everything waiting learns it, and the channel is not used again. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.failReady(new ChannelClosed(false));
    for (const waiter of [...this.pending.values()]) waiter.onClose();
    this.pending.clear();
    for (const listener of this.closeListeners.splice(0)) listener();
  }

  async readFile(path: string): Promise<Buffer> {
    const result = await this.request({ op: 'readFile', path });
    return Buffer.from(result.data ?? '', 'base64');
  }

  async readLines(path: string, request: LineRequest): Promise<LineSlice> {
    const result = await this.request({ op: 'readLines', path, ...request });
    if (!result.lines) throw new Error('the channel answered readLines without lines');
    return result.lines;
  }

  async writeFile(path: string, content: Buffer): Promise<void> {
    await this.request({ op: 'writeFile', path, data: content.toString('base64') });
  }

  /** The resident search's answer, or the reason it declined (see channel-resident.ts). */
  async search(query: ContentQuery, budgetBytes: number): Promise<ContentAnswer | { declined: string }> {
    const result = await this.request({ op: 'search', ...query, budgetBytes });
    const answer = result.search;
    if (!answer) throw new Error('the channel answered a search without a result');
    if (!answer.served) return { declined: answer.reason };
    return { matches: answer.matches, hits: answer.hits.map(([path, line, text, isMatch]) => ({ path, line, text, isMatch: isMatch === 1 })) };
  }

  /** Starts the resident search's first read of the workspace in the background. */
  async warm(budgetBytes: number): Promise<void> {
    await this.request({ op: 'warm', budgetBytes });
  }

  /** ctags JSON lines for one regular file from the resident ctags, or the reason it declined. */
  async tags(path: string): Promise<string | { declined: string }> {
    const result = await this.request({ op: 'tags', path });
    const answer = result.tags;
    if (!answer) throw new Error('the channel answered tags without a result');
    return answer.served ? answer.output : { declined: answer.reason };
  }

  async listFiles(path: string, recursive: boolean, limit: number): Promise<Array<[string, number, string]>> {
    const result = await this.request({ op: 'listFiles', path, recursive, limit });
    return result.entries ?? [];
  }

  /**
   * Runs a command. With `direct`, the channel itself puts it in a session of its own watched by
   * its memory guard, kills the session at the deadline and sweeps it when the command ends
   * (what the exec path's shell wrapper does, without its four extra processes per command).
   */
  run(
    request: {
      cmd: string[];
      cwd: string;
      env: Record<string, string>;
      stdin?: Buffer | undefined;
      direct?: { timeoutMs: number; memoryLimitBytes: number; pidFile: string } | undefined;
    },
    onChunk: (chunk: Buffer, stream: 'stdout' | 'stderr') => void,
  ): ChannelRun {
    const id = this.nextId++;
    let started = false;
    let settleSpawned: { resolve: () => void; reject: (error: Error) => void } = { resolve: () => undefined, reject: () => undefined };
    let settleExit: { resolve: (code: number) => void; reject: (error: Error) => void } = { resolve: () => undefined, reject: () => undefined };
    const spawned = new Promise<void>((resolve, reject) => (settleSpawned = { resolve, reject }));
    const exitCode = new Promise<number>((resolve, reject) => (settleExit = { resolve, reject }));
    spawned.catch(() => undefined);
    exitCode.catch(() => undefined);
    const fail = (error: Error): void => {
      this.pending.delete(id);
      settleSpawned.reject(error);
      settleExit.reject(error);
    };
    this.pending.set(id, {
      onMessage: (message) => {
        if (message.type === 'spawned') {
          started = true;
          settleSpawned.resolve();
        } else if (message.type === 'out') {
          onChunk(Buffer.from(message.data, 'base64'), message.stream);
        } else if (message.type === 'exit') {
          this.pending.delete(id);
          settleExit.resolve(message.exitCode);
        } else if (message.type === 'error') {
          fail(new ChannelFailure(message.exitCode, message.stderr));
        }
      },
      onClose: () => fail(new ChannelClosed(started)),
    });
    this.send({
      id,
      op: 'run',
      cmd: request.cmd,
      cwd: request.cwd,
      env: request.env,
      ...(request.stdin === undefined ? {} : { stdin: request.stdin.toString('base64') }),
      ...(request.direct === undefined ? {} : { direct: request.direct }),
    });
    return {
      spawned,
      exitCode,
      cancel: () => {
        this.send({ id: this.nextId++, op: 'kill', target: id, sweep: request.direct !== undefined });
        this.pending.delete(id);
        settleSpawned.resolve();
        settleExit.resolve(-1);
      },
    };
  }

  private request(body: Record<string, unknown>): Promise<Extract<Message, { type: 'result' }>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        onMessage: (message) => {
          this.pending.delete(id);
          if (message.type === 'result') resolve(message);
          else if (message.type === 'error') reject(new ChannelFailure(message.exitCode, message.stderr));
          else reject(new Error(`unexpected channel message ${message.type}`));
        },
        onClose: () => reject(new ChannelClosed(false)),
      });
      this.send({ id, ...body });
    });
  }

  private send(message: Record<string, unknown>): void {
    if (this.closed) {
      this.pending.get(Number(message.id))?.onClose();
      this.pending.delete(Number(message.id));
      return;
    }
    this.write(`${JSON.stringify(message)}\n`);
  }

  private dispatch(line: string): void {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      return;
    }
    const parsed = Message.safeParse(json);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.type === 'ready') {
      this.markReady(message.pid);
      return;
    }
    this.pending.get(message.id)?.onMessage(message);
  }
}

/**
 * Starts the channel in a container as `user` with exactly `env`, and resolves once it answers.
 * Rejects (and leaves nothing running) when it cannot start within `startTimeoutMs`.
 */
export async function openDockerChannel(
  container: Docker.Container,
  options: { user: string; env: string[]; root: string; startTimeoutMs?: number; heapMiB?: number },
): Promise<{ channel: SandboxChannel; pid: number }> {
  const exec = await container.exec({
    // One V8 worker and one libuv thread: the channel shares the sandbox's process limit. The heap
    // holds the resident search's copy of the workspace text (its budget, see DockerSandbox).
    Cmd: ['node', '--v8-pool-size=1', `--max-old-space-size=${options.heapMiB ?? 256}`, '-e', CHANNEL_PROGRAM, options.root],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    User: options.user,
    WorkingDir: options.root,
    Env: [...options.env, 'UV_THREADPOOL_SIZE=1'],
  });
  const stream: Duplex = await exec.start({ hijack: true, stdin: true });
  const channel = new SandboxChannel((line) => stream.write(line));
  const demuxer = new DockerStreamDemuxer((chunk, which) => {
    if (which === 'stdout') channel.push(chunk);
  });
  stream.on('data', (data: Buffer) => demuxer.push(data));
  stream.on('end', () => channel.close());
  stream.on('close', () => channel.close());
  stream.on('error', () => channel.close());
  channel.onClose(() => stream.destroy());
  let timer: NodeJS.Timeout | undefined;
  try {
    const pid = await Promise.race([
      channel.ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the sandbox command channel did not start in time')), options.startTimeoutMs ?? 15_000);
      }),
    ]);
    return { channel, pid };
  } catch (error) {
    channel.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
