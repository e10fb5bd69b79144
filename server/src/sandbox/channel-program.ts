/**
 * The program behind the in-sandbox command channel, run as `node -e CHANNEL_PROGRAM <root>` by
 * Node 18 inside the sandbox (as the sandbox user). Kept as plain CommonJS text so no build step
 * can rewrite it; `channel.ts` is the host side and describes the protocol.
 *
 * Paths are resolved the way `realpath -m` does in the exec path (every symlink followed, a
 * missing tail allowed) and refused unless the result stays under the root; the file is then
 * opened by its resolved path, so what was checked is what is read or written.
 */
import { CTAGS_PROGRAM } from './channel-ctags';
import { PATTERN_PROGRAM } from './channel-pattern';
import { RESIDENT_PROGRAM } from './channel-resident';

export const CHANNEL_PROGRAM = String.raw`'use strict';
// Keeps the agent's ps output (and its greps) free of this program's text.
process.title = 'dockhand-channel';
const fs = require('fs');
const fsp = fs.promises;
const path = require('path');
const { spawn } = require('child_process');
const os = require('os');
const ROOT = process.argv[1];
const running = new Map();

function send(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

// Shell-like failures ({ exitCode, stderr }) so the host maps them exactly as it maps the exec path's.
function failure(exitCode, stderr) {
  return Object.assign(new Error(stderr), { exitCode, stderr });
}

async function resolveMissing(target, depth) {
  if (depth > 40) throw failure(1, target + ': Too many levels of symbolic links');
  // Synchronous calls: one system call each, no thread-pool hop (see readFile).
  try {
    return fs.realpathSync.native(target);
  } catch (error) {
    if (error.code !== 'ENOENT' && error.code !== 'ENOTDIR') throw error;
  }
  let stat;
  try {
    stat = fs.lstatSync(target);
  } catch (error) {
    stat = undefined;
  }
  if (stat && stat.isSymbolicLink()) {
    const link = fs.readlinkSync(target);
    return resolveMissing(path.resolve(path.dirname(target), link), depth + 1);
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  return path.join(await resolveMissing(parent, depth + 1), path.basename(target));
}

async function resolveInside(relative) {
  if (typeof relative !== 'string' || relative.includes('\0') || relative.startsWith('/')) throw failure(3, 'bad path');
  const resolved = await resolveMissing(ROOT + '/' + relative, 0);
  if (resolved !== ROOT && !resolved.startsWith(ROOT + '/')) throw failure(3, 'escapes the workspace: ' + resolved);
  return resolved;
}

function describe(error) {
  if (error && typeof error.exitCode === 'number') return { exitCode: error.exitCode, stderr: error.stderr };
  const code = error && error.code;
  if (code === 'ENOENT') return { exitCode: 1, stderr: 'No such file or directory' };
  if (code === 'EISDIR') return { exitCode: 1, stderr: 'Is a directory' };
  return { exitCode: 1, stderr: String((error && error.message) || error) };
}

// Synchronous on purpose: under gVisor each hop through libuv's thread pool costs a thread wake-up
// in the sandbox kernel, several per read; a read of a source file blocks the loop for far less.
async function readFile(request) {
  const resolved = await resolveInside(request.path);
  return { data: fs.readFileSync(resolved).toString('base64') };
}

// The slice of a file read_file shows (lines.ts sliceLines, the same rules): only it crosses the boundary.
async function readLines(request) {
  // A file the resident search holds, unchanged since (inotify), is sliced from memory: no system
  // calls. Events queued by commands that ended before this request are applied first.
  await yieldToLoop();
  const held = residentText(request.path);
  if (held) return { lines: held.bytes > request.maxBytes ? { bytes: held.bytes, binary: false, total: 0, lines: [] } : sliceText(held.text, held.bytes, request) };
  const resolved = await resolveInside(request.path);
  const stat = fs.statSync(resolved);
  if (stat.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
  if (stat.size > request.maxBytes) return { lines: { bytes: stat.size, binary: false, total: 0, lines: [] } };
  const buffer = fs.readFileSync(resolved);
  const binary = buffer.subarray(0, 8000).includes(0);
  if (binary || buffer.length > request.maxBytes) return { lines: { bytes: buffer.length, binary: binary, total: 0, lines: [] } };
  return { lines: sliceText(buffer.toString('utf8'), buffer.length, request) };
}

function sliceText(text, bytes, request) {
  const all = text.split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const lines = all.slice(request.start - 1, request.start - 1 + request.count).map((line) => [line.slice(0, request.maxLineChars), line.length]);
  return { bytes: bytes, binary: false, total: all.length, lines: lines };
}

async function writeFile(request) {
  const resolved = await resolveInside(request.path);
  await fsp.mkdir(path.dirname(resolved), { recursive: true });
  await fsp.writeFile(resolved, Buffer.from(request.data, 'base64'));
  return {};
}

// Like find -mindepth 1 [-maxdepth 1] with .git and node_modules pruned, stopping after limit + 1.
async function listFiles(request) {
  const resolved = await resolveInside(request.path);
  const stat = await fsp.stat(resolved).catch(() => undefined);
  if (!stat || !stat.isDirectory()) throw failure(4, 'not a directory');
  const entries = [];
  const wanted = request.limit + 1;
  async function walk(dir, prefix, top) {
    let names;
    try {
      names = await fsp.readdir(dir);
    } catch (error) {
      if (top) throw error;
      return;
    }
    for (const name of names) {
      if (entries.length >= wanted) return;
      if (name === '.git' || name === 'node_modules') continue;
      const full = dir + '/' + name;
      const entry = await fsp.lstat(full).catch(() => undefined);
      if (!entry) continue;
      const relative = prefix ? prefix + '/' + name : name;
      entries.push([entry.isDirectory() ? 'd' : entry.isSymbolicLink() ? 'l' : 'f', entry.size, relative]);
      if (request.recursive && entry.isDirectory()) await walk(full, relative, false);
    }
  }
  await walk(resolved, '', true);
  return { entries };
}

// Kills a command's process group, then whatever else is left in its session (processes that
// moved to groups of their own), without starting a process: the command may have used up the process limit.
function sweep(session) {
  // Several rounds: gVisor does not make a group kill atomic against concurrent forks.
  for (let round = 0; round < 100; round += 1) {
    let found = false;
    try {
      process.kill(-session, 'SIGKILL');
      found = true;
    } catch (error) {
      // No such group any more.
    }
    let names = [];
    try {
      names = fs.readdirSync('/proc');
    } catch (error) {
      return;
    }
    for (const name of names) {
      if (!/^[0-9]+$/.test(name) || Number(name) === session) continue;
      let stat;
      try {
        stat = fs.readFileSync('/proc/' + name + '/stat', 'utf8');
      } catch (error) {
        continue;
      }
      // Fields after "(comm)": state ppid pgrp session.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[3]) !== session) continue;
      try {
        process.kill(Number(name), 'SIGKILL');
        found = true;
      } catch (error) {
        // Gone meanwhile.
      }
    }
    if (!found) return;
  }
}

// The memory guard. gVisor enforces the container's memory limit only from the host cgroup,
// which kills the whole sandbox when it is reached; a per-process address-space cap (ulimit -v)
// breaks V8's WebAssembly reservations (vitest, vite, esbuild's wasm). So while direct commands
// run, the channel reads /proc/meminfo (gVisor reports the sandbox's own usage against its
// limit there) every 50 ms and, when less than the reserve is left, kills the session of the
// command whose processes hold the most resident memory: that command fails (exit 137, a note
// on stderr) and the sandbox lives on. Commands run by exec (before the channel is up) have no
// guard; a hog among them meets the cgroup limit and the sandbox is killed (the host is not).
// Where /proc/meminfo reports the machine, not the sandbox (runc, the host), the guard does nothing.
const guarded = new Map();
let guardTimer;
let guardOff = false;
function meminfo() {
  const text = fs.readFileSync('/proc/meminfo', 'utf8');
  const read = (name) => {
    const match = new RegExp('^' + name + ':\\s+(\\d+)', 'm').exec(text);
    return match ? Number(match[1]) * 1024 : undefined;
  };
  return { total: read('MemTotal'), available: read('MemAvailable') };
}
function sessionRss() {
  const totals = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync('/proc/' + name + '/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const session = Number(fields[3]);
      if (!guarded.has(session)) continue;
      totals.set(session, (totals.get(session) || 0) + Number(fields[21]) * 4096);
    } catch (error) {
      // Gone meanwhile.
    }
  }
  return totals;
}
function guardTick() {
  let info;
  try {
    info = meminfo();
  } catch (error) {
    return;
  }
  for (const entry of guarded.values()) {
    // Only a kernel that reports the sandbox's own limit as its total (gVisor) says how close the
    // sandbox is to it; elsewhere (runc, the host) the figures are the machine's and the guard stands aside.
    if (!info.total || info.available === undefined || info.total > entry.limitBytes * 1.05) {
      guardOff = true;
      clearInterval(guardTimer);
      guardTimer = undefined;
      return;
    }
    const limit = info.total;
    const used = limit - info.available;
    const reserve = Math.max(96 * 1048576, Math.floor(limit / 8));
    if (used < limit - reserve) return;
    break;
  }
  let worst;
  for (const [session, rss] of sessionRss()) if (!worst || rss > worst.rss) worst = { session, rss };
  if (!worst) return;
  const entry = guarded.get(worst.session);
  entry.oom = { rss: worst.rss, limit: entry.limitBytes };
  sweep(worst.session);
}
function guard(session, limitBytes) {
  const entry = { limitBytes, oom: undefined };
  guarded.set(session, entry);
  if (!guardTimer && !guardOff) guardTimer = setInterval(guardTick, 50);
  return entry;
}
function unguard(session) {
  guarded.delete(session);
  if (guarded.size === 0 && guardTimer) {
    clearInterval(guardTimer);
    guardTimer = undefined;
  }
}

// A command in a session of its own (detached: setsid), watched by the memory guard, killed with
// its session at its deadline, and its leftovers killed when it ends. The session id goes to
// pidFile so the host can kill the session by exec should the channel itself die.
function run(request) {
  const id = request.id;
  const direct = request.direct;
  const argv = request.cmd;
  let child;
  try {
    child = spawn(argv[0], argv.slice(1), {
      cwd: request.cwd,
      env: request.env,
      detached: Boolean(direct),
      stdio: [request.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    send(Object.assign({ id, type: 'error' }, describe(error)));
    return;
  }
  if (child.pid !== undefined) running.set(id, child);
  let spawned = false;
  let finished = false;
  let exitCode;
  let deadline;
  const finish = () => {
    if (finished || exitCode === undefined) return;
    finished = true;
    running.delete(id);
    send({ id, type: 'exit', exitCode });
  };
  let guardEntry;
  if (direct && child.pid !== undefined) {
    const session = child.pid;
    fs.writeFile(direct.pidFile, String(session) + '\n', () => undefined);
    deadline = setTimeout(() => sweep(session), direct.timeoutMs);
    if (direct.memoryLimitBytes > 0) guardEntry = guard(session, direct.memoryLimitBytes);
    child.on('exit', () => {
      clearTimeout(deadline);
      unguard(session);
      sweep(session);
      fs.unlink(direct.pidFile, () => undefined);
    });
  }
  child.on('spawn', () => {
    spawned = true;
    send({ id, type: 'spawned', pid: child.pid });
    if (child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(request.stdin, 'base64'));
    }
  });
  child.on('error', (error) => {
    // Before spawn nothing ran: the host may run the command another way.
    running.delete(id);
    if (!spawned) send(Object.assign({ id, type: 'error' }, describe(error)));
  });
  child.stdout.on('data', (data) => send({ id, type: 'out', stream: 'stdout', data: data.toString('base64') }));
  child.stderr.on('data', (data) => send({ id, type: 'out', stream: 'stderr', data: data.toString('base64') }));
  child.on('exit', (code, signal) => {
    exitCode = code !== null ? code : 128 + (os.constants.signals[signal] || 9);
    if (guardEntry && guardEntry.oom) {
      const mib = (bytes) => Math.round(bytes / 1048576);
      const note = '\n[dockhand: killed: the sandbox ran out of memory (limit ' + mib(guardEntry.oom.limit) + ' MiB); this command held ' + mib(guardEntry.oom.rss) + ' MiB]\n';
      send({ id, type: 'out', stream: 'stderr', data: Buffer.from(note).toString('base64') });
      exitCode = 137;
    }
    // Output still in the pipes arrives before close; a process that escaped the sweep may hold
    // them open, so close is not waited for long.
    setTimeout(finish, 500);
  });
  child.on('close', () => finish());
}

function kill(request) {
  const child = running.get(request.target);
  if (!child) return;
  if (request.sweep) return sweep(child.pid);
  // The group when the command has become its leader (setsid), the process itself otherwise.
  for (const target of [-child.pid, child.pid]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch (error) {
      // Already gone.
    }
  }
}

${PATTERN_PROGRAM}
${RESIDENT_PROGRAM}
${CTAGS_PROGRAM}

// A query runs after this turn of the event loop, so inotify events already queued (by a command
// that ended before the query was sent) are applied first.
function searchOperation(request) {
  return yieldToLoop()
    .then(() => search(request))
    .then((answer) => ({ search: answer }));
}

function tagsOperation(request) {
  return tags(request).then((answer) => ({ tags: answer }));
}

// Starts reading the workspace into memory in the background, so the first search finds it there.
function warmOperation(request) {
  refreshCorpus(request.budgetBytes).catch(() => undefined);
  return Promise.resolve({});
}

const operations = { readFile, readLines, writeFile, listFiles, search: searchOperation, tags: tagsOperation, warm: warmOperation };

function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    process.stderr.write('unparsable request\n');
    return;
  }
  if (request.op === 'run') return run(request);
  if (request.op === 'kill') return kill(request);
  const operation = operations[request.op];
  if (!operation) return send({ id: request.id, type: 'error', exitCode: 1, stderr: 'unknown operation ' + request.op });
  operation(request).then(
    (result) => send(Object.assign({ id: request.id, type: 'result' }, result)),
    (error) => send(Object.assign({ id: request.id, type: 'error' }, describe(error))),
  );
}

let pending = [];
process.stdin.on('data', (chunk) => {
  let start = 0;
  let newline;
  while ((newline = chunk.indexOf(10, start)) !== -1) {
    pending.push(chunk.subarray(start, newline));
    const line = Buffer.concat(pending).toString('utf8');
    pending = [];
    start = newline + 1;
    if (line.length > 0) handle(line);
  }
  if (start < chunk.length) pending.push(chunk.subarray(start));
});
// The host went away: commands must not outlive their channel.
process.stdin.on('end', () => {
  for (const child of running.values()) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch (error) {
      // Already gone.
    }
  }
  process.exit(0);
});
process.stdout.on('error', () => process.exit(1));
// Touch the file system once so libuv's thread pool exists before any command can use up the
// process limit.
fsp.realpath(ROOT).then(
  () => send({ type: 'ready', pid: process.pid }),
  (error) => {
    process.stderr.write('channel root unusable: ' + error.message + '\n');
    process.exit(1);
  },
);
`;
