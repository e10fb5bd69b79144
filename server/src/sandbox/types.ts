/**
 * The sandbox contract. The agent loop, the tools and the feedback engine see sandboxes only
 * through these interfaces; `DockerSandboxDriver` (dockerode + gVisor) is the real implementation.
 * Paths given to file operations are relative to the workspace root (/workspace inside the
 * sandbox); implementations refuse absolute paths, `..` escapes and symlinks that point outside.
 */

export interface ExecOptions {
  /** argv form; use ['bash', '-lc', script] for shell. */
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

export interface FileEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink';
  size: number;
}

export interface Sandbox {
  readonly id: string;
  /** The commit the workspace was verified to be at when the sandbox was handed out. */
  readonly baseSha: string;
  readonly image: string;
  exec(opts: ExecOptions): Promise<ExecResult>;
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, content: string | Buffer): Promise<void>;
  listFiles(dir?: string): Promise<FileEntry[]>;
  /** Unified diff of the workspace (tracked and untracked files) against `baseSha`. */
  diff(): Promise<string>;
  /** Stops and removes the container. Idempotent. */
  destroy(): Promise<void>;
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
