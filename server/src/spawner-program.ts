/**
 * The program behind the spawner (`spawner.ts`), run as `node -e SPAWNER_PROGRAM` with an IPC
 * channel: it starts the child processes the server asks for and streams their output back.
 * Kept as plain CommonJS text (like the sandbox's channel program) so that it runs the same under
 * the shipped bundle, tsx and vitest, with no build step and no module of the server's loaded: the
 * point of this process is to stay small, because a fork costs in proportion to the parent's
 * memory (see `spawner.ts`).
 *
 * Messages in: `{op:'spawn', id, command, args, cwd, env, stdin, detached, nice}`, `{op:'kill', id,
 * signal}`. Messages out: `{op:'spawned', id, pid}`, `{op:'stdout'|'stderr', id, data}`,
 * `{op:'error', id, message, code}`, `{op:'close', id, code, signal}` (the last message of a child).
 * When the server goes away (the channel closes) every child's process group is killed and the
 * program exits: nothing it started outlives the server by more than a moment.
 */
export const SPAWNER_PROGRAM = String.raw`'use strict';
process.title = 'dockhand-spawner';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const children = new Map();

function send(message) {
  if (process.connected) process.send(message);
}

function killTree(child, signal) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(child.detached ? -child.pid : child.pid, signal);
  } catch {
    try { child.kill(signal); } catch {}
  }
}

// A lower CPU priority for a child, set as soon as it exists. Its nice value (a grandchild forked
// in that first instant keeps the normal one). And where the kernel schedules by session
// (autogroup, /proc/sys/kernel/sched_autogroup_enabled), a detached child is a session and so a
// group of its own that competes with the server's whole session as an equal, whatever its nice
// value: the group's own nice is what counts there, and it covers every process of the session,
// however early it forked. Writing it may be refused (unprivileged: at most 10 a second), and a
// child that has already exited cannot be found; both are harmless. A server outside any autogroup
// (in the root task group, as under an init that never starts a session: the file is empty there)
// counts as nice 0, the weight one such group gets.
let ownGroupNice;
function lower(child, nice) {
  try { os.setPriority(child.pid, Math.min(19, os.getPriority() + nice)); } catch {}
  if (!child.detached) return;
  try {
    if (ownGroupNice === undefined) ownGroupNice = Number((/nice (-?\d+)/.exec(fs.readFileSync('/proc/self/autogroup', 'utf8')) || [])[1] || 0);
    fs.writeFileSync('/proc/' + child.pid + '/autogroup', String(Math.min(19, ownGroupNice + nice)));
  } catch {}
}

function start(m) {
  let child;
  let closed = false;
  const close = (code, signal) => {
    if (closed) return;
    closed = true;
    children.delete(m.id);
    send({ op: 'close', id: m.id, code, signal });
  };
  try {
    child = spawn(m.command, m.args, {
      cwd: m.cwd,
      env: m.env,
      stdio: [m.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: m.detached === true,
    });
  } catch (error) {
    send({ op: 'error', id: m.id, message: String(error && error.message), code: error && error.code });
    close(null, null);
    return;
  }
  child.detached = m.detached === true;
  children.set(m.id, child);
  if (m.nice > 0 && child.pid !== undefined) lower(child, m.nice);
  child.once('spawn', () => send({ op: 'spawned', id: m.id, pid: child.pid }));
  child.once('error', (error) => {
    send({ op: 'error', id: m.id, message: String(error && error.message), code: error && error.code });
    // A child that never started has no close to wait for.
    if (child.pid === undefined) close(null, null);
  });
  if (m.stdin !== undefined) {
    // A child that exits before reading all of it (EPIPE) is reported by its exit code.
    child.stdin.on('error', () => {});
    child.stdin.end(Buffer.from(m.stdin));
  }
  child.stdout.on('data', (data) => send({ op: 'stdout', id: m.id, data }));
  child.stderr.on('data', (data) => send({ op: 'stderr', id: m.id, data }));
  child.once('close', (code, signal) => close(code, signal));
}

process.on('message', (m) => {
  if (m.op === 'spawn') start(m);
  else if (m.op === 'kill') {
    const child = children.get(m.id);
    if (child) killTree(child, m.signal || 'SIGKILL');
  }
});
process.on('disconnect', () => {
  for (const child of children.values()) killTree(child, 'SIGKILL');
  process.exit(0);
});
`;
