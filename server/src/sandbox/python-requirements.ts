/*
 * The build's helper for Python requirements pip cannot get (no package index here, or one that
 * lacks them): each requirement on its own from pip, else Debian's python3 package of that name
 * (dh-python's list maps PyPI names to Debian's: pytz is python3-tz), fetched with apt-get as the
 * build's user (its own lists under /tmp/dockhand/apt, through the egress proxy that allows
 * deb.debian.org, the CA bundle pip is given), unpacked with dpkg -x into .venv/debian and put on
 * the venv's import path; the rest named. snapshot-build.ts writes it where an install names it.
 * Census: arrow's requirements-tests.txt (pytz, dateparser, simplejson), python-dotenv's tox deps
 * (click, ipython), which the host reference took from Debian too.
 */

/** Where the build writes PYTHON_REQUIREMENTS_PROGRAM, before the install runs. */
export const PYTHON_REQUIREMENTS_HELPER = '/tmp/dockhand/python-requirements.py';

export const PYTHON_REQUIREMENTS_PROGRAM = String.raw`"""Installs requirements one by one into .venv where pip refused them as a whole: each from the
package index pip has, else Debian's python3 package of that name (downloaded, unpacked into
.venv/debian, on the venv's import path), else named as missing. Arguments: requirements,
"-r file" (followed recursively); "--required" first: exit 1 when one is missing. What was done
is said on stderr, one line each."""
import glob, os, re, site, subprocess, sys

APT = '/tmp/dockhand/apt'
PREFIX = os.path.abspath('.venv/debian')


def say(line):
    print(f'dockhand: {line}', file=sys.stderr, flush=True)


def requirements(args):
    out, items = [], list(args)
    while items:
        item = items.pop(0)
        if item in ('-r', '--requirement') and items:
            path = items.pop(0)
            try:
                text = open(path).read()
            except OSError:
                say(f'requirement file not found: {path}')
                continue
            base = os.path.dirname(path)
            for line in text.splitlines():
                line = re.sub(r'(^|\s)#.*$', '', line).strip()
                nested = re.match(r'^(-r|--requirement)\s*=?\s*(\S+)', line)
                if nested:
                    items[:0] = ['-r', os.path.join(base, nested.group(2))]
                elif line and not line.startswith('-'):
                    out.append(line)
        elif item and not item.startswith('-'):
            out.append(item)
    return out


def canonical(requirement):
    name = re.split(r'[\s\[;<>=!~@]', requirement, maxsplit=1)[0]
    return re.sub(r'[-_.]+', '-', name).lower()


def apt(*args):
    options = ['-q', '-o', f'Dir::State::Lists={APT}/lists', '-o', f'Dir::Cache={APT}/cache', '-o', 'Debug::NoLocking=1',
               '-o', f'Dir::Etc::SourceList={APT}/sources.list', '-o', 'Dir::Etc::SourceParts=-', '-o', 'APT::Sandbox::User=' + os.environ.get('USER', 'dockhand')]
    # The CA bundle pip is given (an intercepting proxy's) is apt's too.
    if os.environ.get('PIP_CERT'):
        options += ['-o', f"Acquire::https::CaInfo={os.environ['PIP_CERT']}"]
    return subprocess.run(['apt-get', *options, *args], capture_output=True, text=True, cwd=f'{APT}/debs')


_map = None


def debian_map():
    """PyPI name -> Debian package, from dh-python's list of Debian's Python 3 packages."""
    global _map
    if _map is not None:
        return _map
    _map = {}
    for path in (f'{APT}/lists/partial', f'{APT}/cache/archives/partial', f'{APT}/debs'):
        os.makedirs(path, exist_ok=True)
    release = subprocess.run(['sh', '-c', '. /etc/os-release && echo $VERSION_CODENAME'], capture_output=True, text=True).stdout.strip() or 'bookworm'
    with open(f'{APT}/sources.list', 'w') as file:
        file.write(f'deb https://deb.debian.org/debian {release} main\n')
    updated = apt('update')
    if updated.returncode != 0 or not glob.glob(f'{APT}/lists/*Packages*'):
        say(f"Debian's package lists could not be fetched, no Debian fallback: {' '.join(updated.stderr.strip().splitlines()[-2:])}")
        return _map
    apt('download', 'dh-python')
    for deb in glob.glob(f'{APT}/debs/dh-python_*.deb'):
        listing = subprocess.run(f"dpkg-deb --fsys-tarfile '{deb}' | tar -xO ./usr/share/dh-python/dist/cpython3_fallback", shell=True, capture_output=True, text=True).stdout
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) >= 2:
                _map.setdefault(re.sub(r'[-_.]+', '-', parts[0]).lower(), parts[1])
    _map['__ready__'] = 'yes'
    return _map


def from_debian(requirement):
    mapping = debian_map()
    if not mapping:
        return None
    name = canonical(requirement)
    package = mapping.get(name) or f'python3-{name}'
    # What the install needs (the package and what it depends on that is not installed), as apt
    # plans it; then each one's .deb from the cache, downloaded now or by an earlier build.
    planned = apt('install', '-s', '-y', '--no-install-recommends', package)
    if planned.returncode != 0:
        return None
    needed = re.findall(r'^Inst (\S+) ', planned.stdout, re.M)
    fetched = apt('install', '-d', '-y', '--no-install-recommends', package)
    if fetched.returncode != 0:
        return None
    for name in needed:
        for deb in sorted(glob.glob(f'{APT}/cache/archives/{name}_*.deb'))[-1:]:
            subprocess.run(['dpkg', '-x', deb, PREFIX], check=True)
    # Its commands (python3-coverage's coverage) run with the venv's Python, which sees the package.
    for path in glob.glob(f'{PREFIX}/usr/bin/*'):
        for name in {os.path.basename(path), re.sub(r'^python3-', '', os.path.basename(path))}:
            wrapper = os.path.abspath(f'.venv/bin/{name}')
            if os.path.exists(wrapper) or not open(path, 'rb').read(2) == b'#!':
                continue
            with open(wrapper, 'w') as file:
                file.write(f'#!/bin/sh\nexec {os.path.abspath(".venv/bin/python")} {path} "$@"\n')
            os.chmod(wrapper, 0o755)
    pth = os.path.join(site.getsitepackages()[0], 'dockhand-debian.pth')
    with open(pth, 'w') as file:
        file.write(f'{PREFIX}/usr/lib/python3/dist-packages\n')
    version = subprocess.run(['dpkg-deb', '-f', sorted(glob.glob(f'{APT}/cache/archives/{package}_*.deb'))[-1], 'Version'], capture_output=True, text=True).stdout.strip() if glob.glob(f'{APT}/cache/archives/{package}_*.deb') else '?'
    return f'{package} {version}'


def command_of_system_package(requirement):
    """Debian names a package's command python3-<name> (python3-coverage); pip's would be <name>."""
    name = canonical(requirement)
    system = f'/usr/bin/python3-{name}'
    wrapper = os.path.abspath(f'.venv/bin/{name}')
    if os.path.exists(system) and not os.path.exists(wrapper):
        with open(wrapper, 'w') as file:
            file.write(f'#!/bin/sh\nexec {os.path.abspath(".venv/bin/python")} {system} "$@"\n')
        os.chmod(wrapper, 0o755)


required = sys.argv[1:2] == ['--required']
missing = []
for requirement in requirements(sys.argv[2:] if required else sys.argv[1:]):
    if subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', requirement], capture_output=True).returncode == 0:
        command_of_system_package(requirement)
        continue
    debian = from_debian(requirement)
    if debian:
        say(f'{requirement}: not on the package index here, Debian\'s {debian} installed instead')
    else:
        missing.append(requirement)
        if not required:
            say(f'test requirement not available here (no package index, not in Debian), the tests run without it: {requirement}')
if required and missing:
    for requirement in missing:
        # install-failure.ts reads pip's own words for the blocker: the requirement and the index.
        print(f'ERROR: No matching distribution found for {requirement} (nor a Debian package python3-{canonical(requirement)})', file=sys.stderr)
    sys.exit(1)
sys.exit(0)
`;

/**
 * The base image's Python commands as a venv would have them. Debian's console scripts
 * (`/usr/bin/pytest`, `tox`, `flit`, …) start with `#!/usr/bin/python3`, which sees Debian's
 * packages but not the venv: pip installs no `pytest` of its own where the system one satisfies
 * the requirement, so a CI's bare `pytest` ran Debian's Python and missed what the build put in
 * the venv (census python-dotenv and marshmallow: "ImportError while loading conftest" — click,
 * the project itself — pytest's exit 4; arrow: tests/test_arrow.py's `import pytz` did not
 * collect). Each such command with no name in .venv/bin gets one there, run by the venv's Python,
 * as pip would have made it. Debian also names some commands python3-<name> (python3-coverage's
 * `coverage`, whose pip wheel installs `coverage`; bench:repos toolz's CI runs `coverage run -m
 * pytest`): those get their bare name too, where `binDir` has none. Run after a Python install;
 * names the venv already has (pip, python) are left alone.
 */
export const VENV_COMMANDS_PROGRAM = `import os, re, sys
bin_dir, python = sys.argv[1], os.path.abspath('.venv/bin/python')
for name in sorted(os.listdir(bin_dir)):
    path = os.path.join(bin_dir, name)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        continue
    with open(path, 'rb') as file:
        debian_python = re.match(rb'#! ?/usr/bin/python3(\\.\\d+)?(\\s|$)', file.readline(256))
    names = [name] if debian_python else []
    if debian_python and name.startswith('python3-') and not os.path.exists(os.path.join(bin_dir, name[len('python3-'):])):
        names.append(name[len('python3-'):])
    for wanted in names:
        wrapper = os.path.join('.venv/bin', wanted)
        if os.path.lexists(wrapper):
            continue
        with open(wrapper, 'w') as file:
            file.write(f'#!/bin/sh\\nexec {python} {path} "$@"\\n')
        os.chmod(wrapper, 0o755)
`;

/** VENV_COMMANDS_PROGRAM for the commands of `binDir`, as a shell line run in the workspace. */
export function venvCommandsScript(binDir = '/usr/bin'): string {
  return `if [ -x .venv/bin/python ]; then .venv/bin/python - '${binDir}' <<'DOCKHAND_VENV_COMMANDS'\n${VENV_COMMANDS_PROGRAM}DOCKHAND_VENV_COMMANDS\nfi`;
}
