import type { EnvironmentRecipe } from '@dockhand/protocol';
/**
 * The sandbox contract. The agent loop, the tools and the feedback engine see sandboxes only
 * through these interfaces; `DockerSandboxDriver` (dockerode + gVisor) is the real implementation.
 * Paths given to file operations are relative to the workspace root (/workspace inside the
 * sandbox); implementations refuse absolute paths, `..` escapes and symlinks that point outside.
 */

export interface ExecOptions {
  /** argv form; use ['bash', '-c', script] for shell (not -lc: /etc/profile resets PATH, dropping the toolchains). */
  cmd: string[];
  /** Working directory relative to the workspace root. Default: the workspace root. */
  cwd?: string;
  /** Extra environment, merged over the sandbox's allowlisted environment. */
  env?: Record<string, string>;
  /** Kill the whole process tree after this long. Default 120 s. */
  timeoutMs?: number;
  /** Bytes of combined output kept (head and tail halves). Default 64 KiB. */
  outputCapBytes?: number;
  /** Streaming output, called as chunks arrive (before capping). */
  onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void;
  stdin?: string;
  signal?: AbortSignal;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** True when output beyond the cap was dropped from the middle. */
  truncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

import type { LineRequest, LineSlice } from './lines';

/**
 * A content query in ripgrep's terms (the search tool's), for a sandbox's resident search.
 * Mirrors `rg --hidden --no-require-git -g '!.git' --max-count maxCount [-C context] [-i] [-F] [-g glob] -e pattern -- path`.
 */
export interface ContentQuery {
  pattern: string;
  /** Workspace-relative file or directory, '.' for all. */
  path: string;
  fixedStrings: boolean;
  caseInsensitive: boolean;
  glob?: string | undefined;
  /** Lines of context around each match. */
  context: number;
  /** Matching lines counted per file at most (ripgrep's --max-count). */
  maxCount: number;
  /** Lines (with their context) returned for the first this-many matches; the rest are only counted. */
  limit: number;
}

export interface ContentHit {
  path: string;
  line: number;
  text: string;
  isMatch: boolean;
}

export interface ContentAnswer {
  /** Matching lines found (each file counted up to maxCount). */
  matches: number;
  /** In path order, then line order. */
  hits: ContentHit[];
}

export interface FileEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink';
  size: number;
}

/** Why a sandbox stopped working before it was destroyed, and what it was running then. */
export interface SandboxLoss {
  reason: string;
  /** ISO time it was noticed. */
  at: string;
  /** The commands (shell lines) that were running, cut short. */
  running: string[];
}

export interface Sandbox {
  readonly id: string;
  /** The commit the workspace was verified to be at when the sandbox was handed out. */
  readonly baseSha: string;
  readonly image: string;
  /**
   * How this sandbox's repository installs and tests (the snapshot's recipe), when known. The
   * feedback engine runs `environment.test.command`; sandboxes without one (test doubles) leave
   * it out and the engine detects a runner.
   */
  readonly environment?: EnvironmentRecipe;
  exec(opts: ExecOptions): Promise<ExecResult>;
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, content: string | Buffer): Promise<void>;
  listFiles(dir?: string): Promise<FileEntry[]>;
  /** Optional: the slice of a text file's lines read_file shows, without moving the whole file (see lines.ts). */
  readLines?(path: string, request: LineRequest): Promise<LineSlice>;
  /**
   * Optional resident search: the answer ripgrep would give, from a process that keeps the
   * workspace's searchable files in memory; undefined when it cannot answer this query exactly
   * (the caller then runs ripgrep).
   */
  searchContent?(query: ContentQuery): Promise<ContentAnswer | undefined>;
  /** Optional resident ctags: `ctags --output-format=json --fields=+nKS` lines for one regular file, or undefined (run ctags instead). */
  symbolsOf?(path: string): Promise<string | undefined>;
  /** Unified diff of the workspace (tracked and untracked files) against `baseSha`. */
  diff(): Promise<string>;
  /** Stops and removes the container. Idempotent. */
  destroy(): Promise<void>;
  /**
   * Optional: set once the sandbox was lost (its container exited or was removed, or it stopped
   * answering); every call then fails at once. Sandboxes that cannot be lost leave both out.
   */
  readonly lost?: SandboxLoss | undefined;
  /** Called once when the sandbox is lost (at once when it already is). */
  onLost?(listener: (loss: SandboxLoss) => void): void;
}

export interface SandboxLimits {
  cpus: number;
  memoryMiB: number;
  pids: number;
  /** The sandbox is destroyed after this long regardless of activity. */
  wallClockSeconds: number;
}

export interface CreateSandboxOptions {
  image: string;
  /** Commit the workspace must be at; verified before the sandbox is returned. */
  baseSha: string;
  limits?: Partial<SandboxLimits>;
  /** Ownership labels (task id, pool, server instance) added to the container. */
  labels?: Record<string, string>;
  /** Allowlisted environment; nothing from the server's own environment leaks in. */
  env?: Record<string, string>;
  /** No network unless set; 'package-mirror' only where the host policy allows it. */
  network?: 'none' | 'package-mirror';
}

export interface SandboxDriver {
  create(opts: CreateSandboxOptions): Promise<Sandbox>;
  /** Removes containers labelled as ours that no live owner claims (crash recovery). */
  reconcile(): Promise<{ removed: string[] }>;
}
