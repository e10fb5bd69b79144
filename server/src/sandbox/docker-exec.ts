import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { DockerStreamDemuxer } from './demux';

/*
 * One command in a sandbox container through `docker exec` (the path every call takes when the
 * command channel is not up): the exec's stream demultiplexed, its exit code read back, and the
 * ways the engine says a container is gone or stuck turned into the sandbox's own errors.
 */

export const SANDBOX_USER = '1000:1000';
/**
 * A `docker exec` that has not started within this long means the sandbox no longer answers (a
 * gVisor sentry stuck after a fork storm): the sandbox is marked lost instead of waiting forever.
 */
const EXEC_START_TIMEOUT_MS = 60_000;

export type Started = { exitCode: Promise<number>; done: Promise<void>; abort: () => void };
export type StartOptions = {
  cwd: string;
  env?: Record<string, string> | undefined;
  stdin?: Buffer | undefined;
  user?: string | undefined;
  onChunk: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
};

/** What an exec needs of its sandbox. */
export interface ExecHost {
  container: Docker.Container;
  /** The command's environment (the sandbox's own with `extra` over it). */
  env(extra: Record<string, string> | undefined): string[];
  /** The error for a sandbox destroyed or lost before the command starts, if it is. */
  unavailable(): Error | undefined;
  /** The error when an exec failed because the sandbox is gone (lost, destroyed, its container removed). */
  gone(cause: unknown): Error | undefined;
  markLost(reason: string): void;
  lostError(): Error;
  /** Keeps `fail` while the command runs (a loss fails it at once); returns how to let it go. */
  track(fail: (error: Error) => void): () => void;
}

/** Starts `cmd`; its exit code (-1 when aborted or unknown), when its output ended, and how to stop it. */
export function startDockerExec(host: ExecHost, cmd: string[], options: StartOptions): Started {
  const unavailable = host.unavailable();
  if (unavailable) {
    const gone = Promise.reject(unavailable);
    gone.catch(() => undefined);
    return { exitCode: gone.then(() => -1), done: Promise.resolve(), abort: () => undefined };
  }
  let stream: Duplex | undefined;
  let aborted = false;
  let markDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (markDone = resolve));
  // Settled by the command's end, by abort() (even before the exec started: a sandbox that no
  // longer answers never hands back a stream) and by markLost().
  let settle: { resolve: (code: number) => void; reject: (error: Error) => void } = { resolve: () => undefined, reject: () => undefined };
  const settled = new Promise<number>((resolve, reject) => (settle = { resolve, reject }));
  const untrack = host.track((error) => settle.reject(error));
  const work = (async (): Promise<number> => {
    try {
      const startTimer = setTimeout(() => host.markLost(`it did not start a command within ${EXEC_START_TIMEOUT_MS / 1000} s`), EXEC_START_TIMEOUT_MS);
      let exec: Docker.Exec;
      try {
        exec = await host.container.exec({
          Cmd: cmd,
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: options.stdin !== undefined,
          User: options.user ?? SANDBOX_USER,
          WorkingDir: options.cwd,
          Env: host.env(options.env),
        });
        stream = await exec.start({ hijack: true, stdin: options.stdin !== undefined });
      } finally {
        clearTimeout(startTimer);
      }
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
      const gone = host.gone(error);
      if (gone) throw gone;
      if (isNotRunning(error)) {
        host.markLost('its container is not running');
        throw host.lostError();
      }
      throw error;
    }
  })();
  work.then(settle.resolve, settle.reject);
  const exitCode = settled.finally(untrack);
  exitCode.catch(() => undefined);
  return {
    exitCode,
    done,
    abort: () => {
      aborted = true;
      stream?.destroy();
      if (!stream) {
        markDone();
        settle.resolve(-1);
      }
    },
  };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How a container's end reads in a loss report. */
export function describeExit(state: { ExitCode?: number; OOMKilled?: boolean; Error?: string }): string {
  if (state.OOMKilled) return 'its container was killed at its memory limit';
  if (state.ExitCode === -1) return 'its container was removed';
  return `its container exited (code ${state.ExitCode ?? 'unknown'}${state.Error ? `: ${state.Error}` : ''})`;
}

/** A command as a loss report names it: the shell line the agent or the test runner gave, cut short. */
export function describeCommand(cmd: string[]): string {
  const shell = cmd.indexOf('-c');
  // The exec wrapper is `setsid -w sh -c <script> sh <pidfile> ...cmd`; a tool's is `bash -c <line>`.
  const inner = cmd[0] === 'setsid' ? cmd.slice(7) : cmd;
  const innerShell = inner.indexOf('-c');
  const text = innerShell >= 0 && inner[innerShell + 1] !== undefined ? inner[innerShell + 1] : shell >= 0 && cmd[0] !== 'setsid' ? cmd[shell + 1] : inner.join(' ');
  const line = (text ?? '').replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function isNotRunning(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 409 && /is not running|is paused|restarting/i.test(String((error as { message?: unknown }).message));
}

export function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 404;
}
