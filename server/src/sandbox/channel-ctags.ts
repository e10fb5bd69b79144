/**
 * The resident ctags of the in-sandbox command channel (part of CHANNEL_PROGRAM, plain CommonJS
 * text run by the sandbox's Node 18): one long-lived `ctags --_interactive` that parses a file per
 * request, without a process start (10–40 ms under gVisor here). Requests are queued; a ctags that
 * dies is started again by the next request, and the one in flight is declined.
 */
export const CTAGS_PROGRAM = String.raw`
const ctags = { child: null, buffered: '', queue: [], current: null };

function startCtags() {
  const child = spawn('ctags', ['--_interactive', '--output-format=json', '--fields=+nKS', '--sort=no'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  ctags.child = child;
  ctags.buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (data) => {
    ctags.buffered += data;
    let newline;
    while ((newline = ctags.buffered.indexOf('\n')) !== -1) {
      const line = ctags.buffered.slice(0, newline);
      ctags.buffered = ctags.buffered.slice(newline + 1);
      const job = ctags.current;
      if (!job) continue;
      if (line.startsWith('{"_type": "completed"') || line.startsWith('{"_type":"completed"')) {
        ctags.current = null;
        job.resolve({ served: true, output: job.lines.join('\n') });
        nextCtags();
      } else if (line.startsWith('{"_type": "error"') || line.startsWith('{"_type":"error"')) {
        ctags.current = null;
        job.reject(failure(1, 'ctags: ' + line));
        nextCtags();
      } else if (line.startsWith('{"_type": "tag"') || line.startsWith('{"_type":"tag"')) job.lines.push(line);
    }
  });
  const gone = () => {
    if (ctags.child !== child) return;
    ctags.child = null;
    const job = ctags.current;
    ctags.current = null;
    if (job) job.resolve(declined('ctags stopped'));
    nextCtags();
  };
  child.on('exit', gone);
  child.on('error', gone);
  child.stdin.on('error', () => undefined);
}

function nextCtags() {
  if (ctags.current || ctags.queue.length === 0) return;
  const job = ctags.queue.shift();
  if (!ctags.child) startCtags();
  ctags.current = job;
  ctags.child.stdin.write(JSON.stringify({ command: 'generate-tags', filename: job.filename }) + '\n');
}

// One regular file's tags as ctags JSON lines, from the resident ctags.
async function tags(request) {
  const resolved = await resolveInside(request.path);
  let stat;
  try {
    stat = fs.statSync(resolved);
  } catch (error) {
    return declined('cannot stat ' + request.path + ': ' + error.code);
  }
  if (!stat.isFile()) return declined('not a regular file');
  const filename = resolved === ROOT ? '.' : resolved.slice(ROOT.length + 1);
  return new Promise((resolve, reject) => {
    ctags.queue.push({ filename: filename, lines: [], resolve: resolve, reject: reject });
    nextCtags();
  });
}
`;
