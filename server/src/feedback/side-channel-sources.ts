/*
 * The side channel's two files, written into the sandbox before a step runs (`side-channel.ts`).
 * They leave the repository's command as written: Node loads the preload into every process of
 * the step through NODE_OPTIONS, pytest loads the plugin through PYTEST_PLUGINS, and each adds a
 * machine report only in the runner's own process, however the runner was started (an npm script,
 * a wrapper such as run-s, turbo or lerna, a workspace run).
 *
 * The preload recognises the runner by the script the process runs (`process.argv[1]`, symlinks
 * resolved): jest and vitest get their own JSON reporter, added to the process's own argv before
 * their CLI parses it (the shell command, its `&&` chain and any wrapper are untouched); mocha's
 * runner events are observed (`Runner.prototype.emit`), which keeps the repository's reporter and
 * writes mocha's JSON reporter's shape; ava (`--tap`), node-tap (`--reporter=tap`), tape and uvu
 * report on their own stdout, of which the preload keeps a copy (`process.stdout.write`);
 * node:test's reporter comes from NODE_OPTIONS itself (`--test-reporter=tap` to a file, set by
 * side-channel.ts where the Node version accepts it).
 * Every report lands in RESULTS_DIR as `<runner>-<pid>.json`. Plain CommonJS that runs on Node
 * 14 and up; any error inside it is swallowed, so it can never break the step it observes.
 */

export const SIDE_CHANNEL_DIR = '/tmp/dockhand';
export const RESULTS_DIR = `${SIDE_CHANNEL_DIR}/results`;
/** Where a step's preload sits inside its run's directory: under node_modules, which coverage tools leave out. */
export const PRELOAD_DIR = 'node_modules/.dockhand';
export const PYTEST_PLUGIN_MODULE = 'dockhand_results';

export const PRELOAD_SOURCE = String.raw`'use strict';
// Dockhand's side channel (server/src/feedback/side-channel-sources.ts): a machine report from the test runner's own process.
(function () {
  var fs = require('fs');
  var path = require('path');
  // Beside the preload when the variable is gone: a runner that passes on only the variables it
  // knows (turbo 2's strict env mode keeps NODE_OPTIONS) must not send the report elsewhere.
  var dir = process.env.DOCKHAND_RESULTS_DIR || (/\/node_modules\/\.dockhand\/preload\.cjs$/.test(__filename) ? path.resolve(path.dirname(__filename), '../../results') : '${RESULTS_DIR}');
  var main = process.argv[1] || '';
  try { main = fs.realpathSync(main); } catch (error) { /* a path inside a zip (Yarn PnP) stays as given */ }
  main = main.replace(/\\/g, '/');
  function file(runner) {
    try { fs.mkdirSync(dir, { recursive: true }); } catch (error) { /* reported by the write */ }
    return path.join(dir, runner + '-' + process.pid + '.json');
  }
  function has(names) {
    return process.argv.slice(2).some(function (arg) { return names.some(function (name) { return arg === name || arg.indexOf(name + '=') === 0; }); });
  }
  try {
    if (/\/(jest|jest-cli)\/bin\/jest(\.js)?$/.test(main)) {
      if (!has(['--json', '--outputFile', '--watch', '--watchAll', '--listTests', '--showConfig'])) process.argv.push('--json', '--outputFile=' + file('jest'));
    } else if (/\/vitest\/vitest\.mjs$/.test(main)) {
      if (!has(['--reporter', '--outputFile'])) process.argv.push('--reporter=default');
      if (!has(['--outputFile'])) process.argv.push('--reporter=json', '--outputFile.json=' + file('vitest'));
    } else if (/\/mocha\/bin\/_?mocha(\.js)?$/.test(main)) {
      observeMocha(file('mocha'));
    } else if (/\/ava\/(entrypoints\/cli\.mjs|cli\.js)$/.test(main)) {
      if (!has(['--tap', '-t', '--watch', '-w'])) process.argv.push('--tap');
      tee(file('ava').replace(/json$/, 'tap'));
    } else if (/\/tap\/bin\/run\.js$/.test(main)) {
      if (!has(['-R', '--reporter', '-w', '--watch'])) process.argv.push('--reporter=tap');
      tee(file('tap').replace(/json$/, 'tap'));
    } else if (/\/tape\/bin\/tape$/.test(main)) {
      tee(file('tape').replace(/json$/, 'tap'));
    } else if (/\/uvu\/bin\.js$/.test(main)) {
      tee(file('uvu').replace(/json$/, 'txt'));
    }
  } catch (error) { /* never the step's failure */ }

  // Runners whose report is their own stdout (TAP, uvu's lines): a copy of what the process writes there.
  function tee(target) {
    var fd = fs.openSync(target, 'w');
    var write = process.stdout.write;
    process.stdout.write = function (chunk, encoding) {
      try { fs.writeSync(fd, typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8') : Buffer.from(chunk)); } catch (error) { /* the copy only */ }
      return write.apply(this, arguments);
    };
  }

  function observeMocha(target) {
    var Module = require('module');
    var load = Module._load;
    var done = false;
    Module._load = function (request) {
      var exported = load.apply(this, arguments);
      try {
        if (!done && typeof exported === 'function' && exported.Runner && exported.Runner.prototype && typeof exported.prototype.run === 'function') {
          done = true;
          patchRunner(exported.Runner, target);
        }
      } catch (error) { /* never the step's failure */ }
      return exported;
    };
  }

  function patchRunner(Runner, target) {
    var report = { stats: {}, tests: [], passes: [], failures: [], pending: [] };
    var written = false;
    function write() {
      if (written) return;
      written = true;
      try { fs.writeFileSync(target, JSON.stringify(report)); } catch (error) { /* nothing to report then */ }
    }
    function clean(test, error) {
      var full = '';
      try { full = typeof test.fullTitle === 'function' ? test.fullTitle() : String(test.title); } catch (e) { full = String(test && test.title); }
      var entry = { title: String(test && test.title), fullTitle: full, file: (test && test.file) || (test && test.parent && test.parent.file) || undefined };
      if (error) entry.err = { message: String((error && error.message) || error), stack: String((error && error.stack) || '') };
      return entry;
    }
    var emit = Runner.prototype.emit;
    Runner.prototype.emit = function (event, test, error) {
      try {
        if (event === 'pass') report.passes.push(clean(test));
        else if (event === 'fail') report.failures.push(clean(test, error));
        else if (event === 'pending') report.pending.push(clean(test));
        else if (event === 'end') write();
      } catch (e) { /* never the step's failure */ }
      return emit.apply(this, arguments);
    };
    process.on('exit', write);
  }
})();
`;

/** The pytest plugin: one JSON line per test phase that decides an outcome, in the controller only (xdist workers report to it). */
export const PYTEST_PLUGIN_SOURCE = String.raw`# Dockhand's side channel (server/src/feedback/side-channel-sources.ts): pytest's results as JSON lines.
import json, os

_target = None


def pytest_configure(config):
    global _target
    if hasattr(config, "workerinput"):
        return
    folder = os.environ.get("DOCKHAND_RESULTS_DIR", "${RESULTS_DIR}")
    try:
        os.makedirs(folder, exist_ok=True)
        _target = open(os.path.join(folder, "pytest-%d.json" % os.getpid()), "w")
    except OSError:
        _target = None


def _write(entry):
    if _target is not None:
        _target.write(json.dumps(entry) + "\n")
        _target.flush()


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or (report.when == "teardown" and report.outcome == "failed"):
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            # An expected failure (xfail) and an unexpected pass both passed, as -rA's XFAIL reads.
            outcome = "passed"
        _write({"nodeid": report.nodeid, "when": report.when, "outcome": outcome, "message": str(report.longrepr)[-3000:] if report.failed else ""})


def pytest_collectreport(report):
    if report.failed:
        _write({"nodeid": report.nodeid or ".", "when": "collect", "outcome": "failed", "message": str(report.longrepr)[-3000:]})
`;

export const SITECUSTOMIZE_MODULE = 'sitecustomize';

/**
 * `sitecustomize.py` on the step's PYTHONPATH: unittest's results as the pytest plugin's JSON lines
 * (`unittest-<pid>.json`), for a suite run by `python -m unittest`, `coverage run -m unittest
 * discover` (coverage runs the module in its own process, so no child to reach) or a `tox` command
 * list (side-channel.ts passes PYTHONPATH through tox's environment). Python imports it at start-up
 * in every process of the step; it only adds a finder that patches `unittest.result.TestResult`
 * when a process imports it, so a process that runs no unittest pays one `sys.meta_path` entry.
 * The code that runs during the tests is compiled under the name `<dockhand>`: coverage.py traces
 * no file whose name starts with `<`, so a `fail_under` is not lowered by it. Under pytest the
 * result object is pytest's own (not a TestResult), so a unittest class run by pytest is counted
 * once, by the plugin. The Python distribution's own sitecustomize (Debian ships one) still runs.
 */
export const SITECUSTOMIZE_SOURCE = String.raw`# Dockhand's side channel (server/src/feedback/side-channel-sources.ts): unittest's results as JSON lines.
import os as _os, sys as _sys

_HOOK = r'''
import json, os, sys

def install(here):
    folder = os.environ.get("DOCKHAND_RESULTS_DIR") or os.path.join(here, "results")
    # A tool that passed on only PYTHONPATH (tox): the pytest plugin and the children find the folder too.
    os.environ["DOCKHAND_RESULTS_DIR"] = folder
    state = {"file": None}

    def write(entry):
        try:
            if state["file"] is None:
                os.makedirs(folder, exist_ok=True)
                state["file"] = open(os.path.join(folder, "unittest-%d.json" % os.getpid()), "a")
            state["file"].write(json.dumps(entry) + "\n")
            state["file"].flush()
        except Exception:
            pass

    def node_id(test):
        kind = type(test)
        method = getattr(test, "_testMethodName", None)
        if kind.__name__ == "_FailedTest" or method is None:
            return None
        path = None
        try:
            path = os.path.abspath(sys.modules[kind.__module__].__file__)
        except Exception:
            return test.id()
        return "%s::%s::%s" % (path, kind.__qualname__, method)

    def failed_load(test):
        # unittest's stand-in for a module that failed to import (discover's _FailedTest): the file's load error.
        method = getattr(test, "_testMethodName", "") or ""
        module = method if type(test).__name__ == "_FailedTest" else str(getattr(test, "description", test))
        return module.replace(".", "/") + ".py" if type(test).__name__ == "_FailedTest" else module

    def record(test, outcome, message=""):
        try:
            nodeid = node_id(test)
            if nodeid is None:
                write({"nodeid": failed_load(test), "when": "collect", "outcome": "failed", "message": message[-3000:]})
                return
            write({"nodeid": nodeid, "when": "call", "outcome": outcome, "message": message[-3000:]})
        except Exception:
            pass

    def patch(module):
        result = getattr(module, "TestResult", None)
        if result is None or getattr(result, "_dockhand", False):
            return
        result._dockhand = True
        def text(self, err, test):
            try:
                return self._exc_info_to_string(err, test)
            except Exception:
                return str(err[1]) if err else ""
        def wrap(name, observe):
            original = getattr(result, name, None)
            if original is None:
                return
            def patched(self, test, *rest):
                try:
                    observe(self, test, *rest)
                except Exception:
                    pass
                return original(self, test, *rest)
            setattr(result, name, patched)
        wrap("addSuccess", lambda self, test: record(test, "passed"))
        wrap("addFailure", lambda self, test, err: record(test, "failed", text(self, err, test)))
        wrap("addError", lambda self, test, err: record(test, "failed", text(self, err, test)))
        wrap("addSkip", lambda self, test, reason: record(test, "skipped"))
        wrap("addExpectedFailure", lambda self, test, err: record(test, "passed"))
        wrap("addUnexpectedSuccess", lambda self, test: record(test, "failed", "unexpected success"))
        wrap("addSubTest", lambda self, test, subtest, err: err is not None and record(test, "failed", text(self, err, subtest)))

    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name != "unittest.result":
                return None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is None:
                    continue
                loader = spec.loader
                run = getattr(loader, "exec_module", None)
                if run is not None:
                    def exec_module(module):
                        run(module)
                        try:
                            patch(module)
                        except Exception:
                            pass
                    loader.exec_module = exec_module
                return spec
            return None

    if "unittest.result" in sys.modules:
        patch(sys.modules["unittest.result"])
    else:
        sys.meta_path.insert(0, Finder())
'''

try:
    _scope = {}
    exec(compile(_HOOK, "<dockhand>", "exec"), _scope)
    _scope["install"](_os.path.dirname(_os.path.abspath(__file__)))
except Exception:
    pass

# The next sitecustomize on the path (the distribution's), as if this one were not there.
try:
    import importlib.machinery as _machinery
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _rest = [entry for entry in _sys.path if _os.path.abspath(entry or ".") != _here]
    _spec = _machinery.PathFinder.find_spec("sitecustomize", _rest)
    if _spec is not None and _spec.origin and _os.path.abspath(_spec.origin) != _os.path.abspath(__file__):
        with open(_spec.origin) as _source:
            exec(compile(_source.read(), _spec.origin, "exec"), {"__name__": "sitecustomize", "__file__": _spec.origin})
except Exception:
    pass
`;
