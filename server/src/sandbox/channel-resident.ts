/**
 * The resident search of the in-sandbox command channel (part of CHANNEL_PROGRAM, plain CommonJS
 * text run by the sandbox's Node 18): content search from an in-memory copy of the workspace. The
 * pattern translation is in channel-pattern.ts, the resident ctags in channel-ctags.ts.
 *
 * Why: under gVisor every system call and every new process is far dearer than on the host (on the
 * ptrace platform here about 30 µs a call and 10–40 ms a process), so ripgrep walking a large tree
 * per query spends almost all its time in the sandbox kernel. A process that already holds the
 * files answers a query with no system calls at all; a ctags that is already running parses a file
 * without a process start. See server/src/sandbox/README.md ("Resident tools") for the contract.
 *
 * Search keeps ripgrep's meaning, or declines:
 * - the file set is ripgrep's own (`rg --files --no-require-git --hidden -g !.git`, so .gitignore,
 *   .ignore and hidden files count as they do for the search tool), read once, then kept current
 *   from inotify: a changed file is read again, a created, removed or renamed entry (or a changed
 *   ignore file) makes the next query list the files again;
 * - the pattern is translated from ripgrep's (Rust) syntax into an equivalent JavaScript regular
 *   expression that, like ripgrep, cannot match across a line end and gives \d \w \s \b their
 *   Unicode meaning; syntax outside what the translation covers (inline flags, look-around,
 *   POSIX or nested classes, \x escapes, ...) and patterns whose backtracking could blow up (a
 *   repeated group holding a repetition or an alternation) are declined;
 * - files JavaScript should not scan with the pattern (lines over 4 KiB when the pattern repeats
 *   something: backtracking could go quadratic; files over 16 MiB) are searched by ripgrep itself,
 *   named explicitly, and merged in;
 * - anything else it cannot answer exactly (a glob with a directory part, a file outside the
 *   in-memory set, a workspace over the memory budget) is declined, and the caller runs ripgrep
 *   over the whole query. A declined query says why.
 */
export const RESIDENT_PROGRAM = String.raw`
const { spawnSync } = require('child_process');

const LONGEST_LINE = 4096;
const IGNORE_FILES = new Set(['.gitignore', '.ignore', '.rgignore']);
const MAX_FILE_BYTES = 16 * 1024 * 1024;

function declined(reason) {
  return { served: false, reason: reason };
}

const corpus = {
  files: null, // Map: relative path -> { text, bytes, ascii, longLines?, binary?, tooLarge? } once loaded
  bytes: 0,
  listingStale: true,
  dirty: new Set(),
  watchers: new Map(),
  disabled: null,
  loads: 0,
};

function listFilesAsRipgrepDoes() {
  const listed = spawnSync('rg', ['--files', '--no-require-git', '--hidden', '-g', '!.git'], {
    cwd: ROOT,
    maxBuffer: 256 * 1024 * 1024,
    encoding: 'buffer',
  });
  if (listed.error) throw listed.error;
  if (listed.status !== 0 && listed.status !== 1) throw new Error('rg --files failed: ' + String(listed.stderr).slice(0, 500));
  return String(listed.stdout).split('\n').filter((line) => line.length > 0);
}

function loadFile(relative) {
  let buffer;
  try {
    const stat = fs.lstatSync(ROOT + '/' + relative);
    if (!stat.isFile()) return null;
    if (stat.size > MAX_FILE_BYTES) return { text: '', tooLarge: true, bytes: 0 };
    buffer = fs.readFileSync(ROOT + '/' + relative);
  } catch (error) {
    return null;
  }
  // ripgrep skips files it finds to be binary; a file with a NUL byte counts as binary here.
  if (buffer.includes(0)) return { text: '', binary: true, bytes: 0 };
  const text = buffer.toString('utf8');
  let longLines = false;
  let start = 0;
  for (let end = text.indexOf('\n'); end !== -1 && !longLines; end = text.indexOf('\n', start)) {
    longLines = end - start > LONGEST_LINE;
    start = end + 1;
  }
  if (text.length - start > LONGEST_LINE) longLines = true;
  return { text: text, longLines: longLines, ascii: !NOT_PLAIN_ASCII.test(text), bytes: buffer.length };
}

function watchDirectory(relativeDir) {
  if (corpus.watchers.has(relativeDir)) return;
  const absolute = relativeDir === '' ? ROOT : ROOT + '/' + relativeDir;
  let watcher;
  try {
    watcher = fs.watch(absolute, { persistent: false }, (event, name) => {
      if (!name) {
        corpus.listingStale = true;
        return;
      }
      const relative = relativeDir === '' ? String(name) : relativeDir + '/' + name;
      // A changed ignore file changes which files ripgrep searches: list them again.
      if (IGNORE_FILES.has(String(name))) corpus.listingStale = true;
      else if (event === 'change' && corpus.files && corpus.files.has(relative)) corpus.dirty.add(relative);
      else corpus.listingStale = true;
    });
  } catch (error) {
    // A directory that went away between the listing and here: the next listing settles it.
    corpus.listingStale = true;
    return;
  }
  watcher.on('error', () => {
    corpus.listingStale = true;
    watcher.close();
    corpus.watchers.delete(relativeDir);
  });
  corpus.watchers.set(relativeDir, watcher);
}

function forget(relative) {
  const entry = corpus.files.get(relative);
  if (entry) corpus.bytes -= entry.bytes;
  corpus.files.delete(relative);
}

function remember(relative) {
  forget(relative);
  const entry = loadFile(relative);
  if (!entry) return;
  corpus.files.set(relative, entry);
  corpus.bytes += entry.bytes;
}

let refreshing = null;

function yieldToLoop() {
  return new Promise((resolve) => setImmediate(resolve));
}

// Brings the in-memory copy up to date; resolves to a reason when it cannot serve at all. One
// refresh at a time (concurrent queries share it).
function refreshCorpus(budgetBytes) {
  if (!refreshing) {
    refreshing = refreshRounds(budgetBytes).finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

// Reads in slices of about 40 ms and yields between them, so that while a large tree loads the
// channel still relays commands' output, kills and deadlines. Changes seen meanwhile are applied
// in a further round.
async function refreshRounds(budgetBytes) {
  if (!corpus.files) corpus.files = new Map();
  for (let round = 0; round < 5; round += 1) {
    if (corpus.disabled) return corpus.disabled;
    if (!corpus.listingStale && corpus.dirty.size === 0) return null;
    if (corpus.listingStale) {
      corpus.listingStale = false;
      corpus.loads += 1;
      const listed = listFilesAsRipgrepDoes();
      const wanted = new Set(listed);
      for (const known of Array.from(corpus.files.keys())) if (!wanted.has(known)) forget(known);
      const directories = new Set(['']);
      let slice = Date.now();
      for (const relative of listed) {
        if (Date.now() - slice > 40) {
          await yieldToLoop();
          slice = Date.now();
        }
        if (!corpus.files.has(relative)) remember(relative);
        for (let slash = relative.lastIndexOf('/'); slash > 0; slash = relative.lastIndexOf('/', slash - 1)) {
          const dir = relative.slice(0, slash);
          if (directories.has(dir)) break;
          directories.add(dir);
        }
        if (corpus.bytes > budgetBytes) {
          corpus.disabled = 'the workspace has more text than the in-memory search budget (' + Math.round(budgetBytes / 1048576) + ' MiB)';
          corpus.files = new Map();
          corpus.bytes = 0;
          for (const watcher of corpus.watchers.values()) watcher.close();
          corpus.watchers.clear();
          return corpus.disabled;
        }
      }
      for (const [dir, watcher] of corpus.watchers) {
        if (!directories.has(dir)) {
          watcher.close();
          corpus.watchers.delete(dir);
        }
      }
      for (const dir of directories) watchDirectory(dir);
    }
    // Changed files still in the set (a listing just now may have dropped some) are read again.
    const dirty = Array.from(corpus.dirty);
    corpus.dirty.clear();
    for (const relative of dirty) if (corpus.files.has(relative)) remember(relative);
    // Events from what happened during this round arrive on the next turn of the loop.
    await yieldToLoop();
  }
  return null;
}

// The text of a workspace file as the resident search holds it, when that is known to be the file's
// content now: held (a regular, non-binary file of ripgrep's set, by exactly this path), no change
// seen since it was read, no listing or refresh pending. Otherwise null (read the disk).
function residentText(relative) {
  if (!corpus.files || refreshing || corpus.listingStale || corpus.dirty.has(relative)) return null;
  const entry = corpus.files.get(relative);
  if (!entry || entry.binary || entry.tooLarge) return null;
  return entry;
}

function isBelow(relative, scope) {
  return scope === '.' || relative === scope || relative.startsWith(scope + '/');
}

// Mirrors: rg --json --no-require-git --hidden -g '!.git' --max-count maxCount [-C context] [-i] [-F] [-g glob] -e pattern -- scope
// Answers { served: true, matches, hits: [[path, line, text, isMatch]] } with hits for the first
// 'limit' matches (and their context), files in path order.
async function search(request) {
  const scope = request.path;
  if (typeof scope !== 'string' || scope.startsWith('/') || scope.split('/').includes('..')) return declined('the path is not a plain workspace path');
  // Two compilations: ripgrep's Unicode meanings, and the faster ASCII ones for files that are all
  // ASCII without carriage returns (where both mean the same).
  const matchers = {};
  let repeats = false;
  let required = '';
  for (const [name, classes] of [['unicode', UNICODE_CLASSES], ['ascii', ASCII_CLASSES]]) {
    let source;
    if (request.fixedStrings) {
      if (request.pattern.includes('\n')) return declined('the literal has a line break');
      source = escapeLiteral(request.pattern);
      required = request.pattern;
    } else {
      const translated = translatePattern(request.pattern, classes);
      if (typeof translated === 'string') return declined('the pattern ' + translated);
      source = translated.source;
      repeats = translated.repeats;
      required = translated.required;
    }
    const flags = 'u' + (request.caseInsensitive ? 'i' : '') + (name === 'ascii' ? 'm' : '');
    try {
      matchers[name] = { regex: new RegExp(source, 'g' + flags), lineRegex: new RegExp(source, flags) };
    } catch (error) {
      return declined('the pattern does not translate: ' + error.message);
    }
  }
  let glob = null;
  let globNegated = false;
  if (request.glob) {
    globNegated = request.glob.startsWith('!');
    glob = globToRegExp(globNegated ? request.glob.slice(1) : request.glob);
    if (typeof glob === 'string') return declined('the ' + glob);
  }
  const unavailable = await refreshCorpus(request.budgetBytes);
  if (unavailable) return declined(unavailable);

  const inScope = [];
  for (const relative of corpus.files.keys()) if (isBelow(relative, scope)) inScope.push(relative);
  if (inScope.length === 0) return declined('no file of the in-memory set is under ' + scope);
  if (glob && inScope.length === 1 && inScope[0] === scope) return declined('a glob with a single file');
  inScope.sort();

  const selected = [];
  for (const relative of inScope) {
    if (glob) {
      const below = scope === '.' ? relative : relative.slice(scope.length + 1);
      const parts = below.split('/');
      const name = parts[parts.length - 1];
      const dirMatch = parts.slice(0, -1).some((part) => glob.test(part));
      if (globNegated) {
        if (glob.test(name) || dirMatch) continue;
      } else {
        if (dirMatch) return declined('the glob also names a directory');
        if (!glob.test(name)) continue;
      }
    }
    if (!corpus.files.get(relative).binary) selected.push(relative);
  }
  // Files JavaScript should not scan with this pattern (very long lines with a repetition, where
  // backtracking can go quadratic; files too large to keep) are left to ripgrep, named explicitly.
  const leftovers = selected.filter((relative) => {
    const entry = corpus.files.get(relative);
    return entry.tooLarge || (entry.longLines && repeats);
  });
  const leftoverSet = new Set(leftovers);
  let fromRipgrep = new Map();
  if (leftovers.length > 0) {
    fromRipgrep = ripgrepFiles(leftovers, request);
    if (typeof fromRipgrep === 'string') return declined(fromRipgrep);
  }

  // A substring every match contains rules files out at memchr speed (not under -i).
  const mustContain = request.caseInsensitive ? '' : required;
  const hits = [];
  let matches = 0;
  let shown = 0;
  for (const relative of selected) {
    let result = fromRipgrep.get(relative);
    if (!result && !leftoverSet.has(relative)) {
      const entry = corpus.files.get(relative);
      if (mustContain && !entry.text.includes(mustContain)) continue;
      result = searchText(relative, entry.text, matchers, entry.ascii, request, shown < request.limit);
    }
    if (!result || result.count === 0) continue;
    matches += result.count;
    for (const hit of result.hits) {
      if (shown >= request.limit) break;
      if (hit[3] === 1) shown += 1;
      hits.push(hit);
    }
  }
  return { served: true, matches: matches, hits: hits, files: selected.length };
}

// One file's matching lines (up to maxCount) with their context, merged as ripgrep prints them.
// ASCII lines (no carriage return) take the fast ASCII matcher, others the Unicode one.
// eslint-disable-next-line no-control-regex
const NOT_PLAIN_ASCII = /[^\x00-\x7f]|\r/;

function searchText(relative, text, matchers, ascii, request, wantHits) {
  const contextLines = request.context || 0;
  let found = 0;
  const fileMatches = [];
  if (ascii) {
    // The whole file at once: one scan, line numbers counted only up to each match.
    const regex = matchers.ascii.regex;
    regex.lastIndex = 0;
    let lineNumber = 1;
    let counted = 0; // where line numbers were counted up to
    while (found < request.maxCount) {
      const match = regex.exec(text);
      if (!match) break;
      const lineStart = match.index === 0 ? 0 : text.lastIndexOf('\n', match.index - 1) + 1;
      let lineEnd = text.indexOf('\n', match.index);
      if (lineEnd === -1) lineEnd = text.length;
      // An empty match after the last line end is not on a line.
      if (match.index === text.length && lineStart === text.length) break;
      for (let at = text.indexOf('\n', counted); at !== -1 && at < lineStart; at = text.indexOf('\n', at + 1)) lineNumber += 1;
      counted = lineStart;
      fileMatches.push([lineNumber, lineStart, lineEnd]);
      found += 1;
      regex.lastIndex = lineEnd + 1;
      if (lineEnd + 1 > text.length) break;
    }
  } else {
    // Line by line (a match never spans lines, so this is the same answer), each line with the
    // matcher its characters allow: the Unicode look-arounds are slow, and most lines are ASCII.
    let lineNumber = 0;
    for (let start = 0; start < text.length && found < request.maxCount; ) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = text.length;
      lineNumber += 1;
      const line = text.slice(start, end);
      if ((NOT_PLAIN_ASCII.test(line) ? matchers.unicode : matchers.ascii).lineRegex.test(line)) {
        fileMatches.push([lineNumber, start, end]);
        found += 1;
      }
      start = end + 1;
    }
  }
  if (found === 0) return null;
  // Once a file's count is reached ripgrep still prints the last match's after-context, and
  // shows (and counts) the lines in it that match as matches.
  const lateMatches = new Set();
  if (contextLines > 0 && found === request.maxCount) {
    const [last, , lastEnd] = fileMatches[fileMatches.length - 1];
    let start = lastEnd + 1;
    for (let k = last + 1; k <= last + contextLines && start < text.length; k += 1) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = text.length;
      const line = text.slice(start, end);
      if ((NOT_PLAIN_ASCII.test(line) ? matchers.unicode : matchers.ascii).lineRegex.test(line)) lateMatches.add(k);
      start = end + 1;
    }
  }
  if (!wantHits) return { count: found + lateMatches.size, hits: [] };
  const lines = contextLines > 0 ? text.split('\n') : null;
  const lastLine = lines ? lines.length - (text.endsWith('\n') ? 1 : 0) : 0;
  const hits = [];
  const emitted = new Map(); // line number -> its hit
  for (const [number, start, end] of fileMatches) {
    if (lines) {
      for (let k = Math.max(1, number - contextLines); k < number; k += 1) {
        if (emitted.has(k)) continue;
        const hit = [relative, k, lines[k - 1], 0];
        hits.push(hit);
        emitted.set(k, hit);
      }
    }
    if (emitted.has(number)) emitted.get(number)[3] = 1; // a context line that is a match is printed as one
    else {
      const hit = [relative, number, text.slice(start, end), 1];
      hits.push(hit);
      emitted.set(number, hit);
    }
    if (lines) {
      for (let k = number + 1; k <= Math.min(lastLine, number + contextLines); k += 1) {
        if (emitted.has(k)) continue;
        const hit = [relative, k, lines[k - 1], lateMatches.has(k) ? 1 : 0];
        hits.push(hit);
        emitted.set(k, hit);
      }
    }
  }
  return { count: found + lateMatches.size, hits: hits };
}

// ripgrep itself over files named explicitly (all in its own file set already): path -> { count, hits }.
function ripgrepFiles(files, request) {
  const args = ['--json', '--no-require-git', '--hidden', '--max-count', String(request.maxCount)];
  if (request.context > 0) args.push('-C', String(request.context));
  if (request.caseInsensitive) args.push('-i');
  if (request.fixedStrings) args.push('-F');
  args.push('-e', request.pattern, '--');
  const results = new Map();
  for (let at = 0; at < files.length; at += 500) {
    const ran = spawnSync('rg', args.concat(files.slice(at, at + 500)), { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: 60000 });
    if (ran.error || (ran.status !== 0 && ran.status !== 1)) return 'ripgrep failed on the files left to it: ' + String(ran.error || ran.stderr).slice(0, 300);
    for (const line of String(ran.stdout).split('\n')) {
      if (!line.startsWith('{"type":"match"') && !line.startsWith('{"type":"context"')) continue;
      const message = JSON.parse(line);
      const data = message.data;
      const path = data.path.text;
      const text = data.lines.text !== undefined ? data.lines.text : Buffer.from(data.lines.bytes, 'base64').toString('utf8');
      const isMatch = message.type === 'match' ? 1 : 0;
      let result = results.get(path);
      if (!result) results.set(path, (result = { count: 0, hits: [] }));
      result.count += isMatch;
      result.hits.push([path, data.line_number, text.replace(/\r?\n$/, ''), isMatch]);
    }
  }
  return results;
}
`;
