import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RepoMirror } from '../../server/src/sandbox/mirror';
import { secretForms } from '../../server/src/sandbox/setup-secrets';
import { SnapshotManager } from '../../server/src/sandbox/snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from '../../server/src/sandbox/test-support';
import { ToolchainStore } from '../../server/src/sandbox/toolchains';
import { writeReportPart } from './support/report';

/*
 * Issue #31 item 2: a repository's `.dockhand/setup.sh` writes its setup-only secret into the
 * snapshot in every form an attacker tried (and the ones the old search caught), each in its own
 * file, in real gVisor snapshot builds of one fixture repository (one commit per build): the
 * forms the old search knew (raw, base64, base64url, URL-encoded) and the ones it let through
 * (hex, HEX, gzip, a jar's member, reversed, rot13, split over two lines, base64 of `user:secret`
 * in an `.npmrc` `_auth` line and in a Docker `config.json`). Each build must fail naming every
 * file and its form, and no image may hold any of them: every image the builds made is opened
 * and each form's file looked for (`setup_secret_forms_in_image`, 0 to pass).
 */

const docker = new Docker();
const ownerId = `attack-setup-secrets-${process.pid}`;
const repository = `dockhand/attack-setup-secrets-${process.pid}`;
const CA = '/etc/ssl/certs/ca-certificates.crt';
// Upper and lower case, digits and URL-special characters: every encoding differs from the value.
const VALUE = `sntrys_${randomBytes(30).toString('base64')}/+=`;

interface Form {
  name: string;
  path: string;
  encoding: RegExp;
  write: string;
}

const KNOWN_BEFORE: Form[] = [
  { name: 'raw', path: '/workspace/leak/raw.txt', encoding: /^raw$/, write: 'printf "token=%s\\n" "$v" > leak/raw.txt' },
  { name: 'base64', path: '/workspace/leak/b64.txt', encoding: /^base64/, write: 'base64 -w0 "$SENTRY_AUTH_FILE" > leak/b64.txt' },
  { name: 'base64url', path: '/workspace/leak/b64url.txt', encoding: /^base64(url)?\b/, write: 'base64 -w0 "$SENTRY_AUTH_FILE" | tr "+/" "-_" | tr -d = > leak/b64url.txt' },
  { name: 'URL-encoded', path: '/workspace/leak/url.txt', encoding: /URL-encoded/, write: 'python3 -c "import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=\'\'))" "$v" > leak/url.txt' },
];

const LET_THROUGH_BEFORE: Form[] = [
  { name: 'hex', path: '/workspace/leak/token.hex', encoding: /^hex$/, write: 'printf %s "$v" | od -An -tx1 | tr -d " \\n" > leak/token.hex' },
  { name: 'HEX', path: '/workspace/leak/token.HEX', encoding: /^hex \(upper case\)$/, write: 'printf %s "$v" | od -An -tx1 | tr -d " \\n" | tr a-f A-F > leak/token.HEX' },
  { name: 'gzip', path: '/workspace/leak/token.gz', encoding: /in a gzip$/, write: 'printf "%s\\n" "$v" | gzip -c > leak/token.gz' },
  {
    name: 'zip member',
    path: '/workspace/leak/bundle.jar!META-INF/token.properties',
    encoding: /in a zip$/,
    write: 'python3 -c "import sys, zipfile; z = zipfile.ZipFile(\'leak/bundle.jar\', \'w\', zipfile.ZIP_DEFLATED); z.writestr(\'META-INF/token.properties\', \'token=\' + sys.argv[1]); z.close()" "$v"',
  },
  { name: 'reversed', path: '/workspace/leak/token.rev', encoding: /^reversed$/, write: 'python3 -c "import sys; print(sys.argv[1][::-1])" "$v" > leak/token.rev' },
  { name: 'rot13', path: '/workspace/leak/token.rot13', encoding: /^rot13$/, write: 'printf "%s\\n" "$v" | tr A-Za-z N-ZA-Mn-za-m > leak/token.rot13' },
  { name: 'split over two lines', path: '/workspace/leak/token.split', encoding: /split across lines$/, write: 'printf "%s\\n%s\\n" "${v:0:24}" "${v:24}" > leak/token.split' },
  { name: '.npmrc _auth', path: '/home/dockhand/.npmrc', encoding: /^base64/, write: 'printf "//registry.acme.example/:_auth=%s\\n" "$(printf "deploy:%s" "$v" | base64 -w0)" > "$HOME/.npmrc"' },
  {
    name: 'Docker config.json auth',
    path: '/home/dockhand/.docker/config.json',
    encoding: /^base64/,
    write: 'mkdir -p "$HOME/.docker"; printf \'{"auths":{"registry.acme.example":{"auth":"%s"}}}\\n\' "$(printf "ci-bot:%s" "$v" | base64 -w0)" > "$HOME/.docker/config.json"',
  },
];

let dataDir: string;
let mirror: RepoMirror;
let snapshots: SnapshotManager;
let fixture: ReturnType<typeof createRepoFromFiles>;
const REPO = 'acme/setup-leaks';

beforeAll(() => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-attack-setup-secrets-'));
  fixture = createRepoFromFiles({ 'README.md': '# setup leaks\n', '.dockhand/environment.yml': 'secrets: [SENTRY_AUTH]\ninstall: "true"\n', '.dockhand/setup.sh': 'true\n' });
  mirror = new RepoMirror(dataDir, { sources: () => fixture.path });
  snapshots = new SnapshotManager({
    docker,
    mirror,
    dataDir,
    ownerId,
    repository,
    egress: 'none',
    extraCaBundle: CA,
    toolchains: new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA }),
    registryCredentials: async (_repo, names) => ({
      values: new Map(names.filter((name) => name === 'SENTRY_AUTH').map((name) => [name, VALUE])),
      missing: names.filter((name) => name !== 'SENTRY_AUTH'),
    }),
  });
});

afterAll(async () => {
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
  for (const path of [dataDir, fixture?.path]) if (path) rmSync(path, { recursive: true, force: true });
});

/** A build of a commit whose setup.sh writes each form: the build's error (undefined if it built). */
async function buildWriting(forms: Form[], message: string): Promise<Error | undefined> {
  const setup = ['set -eu', 'v=$(cat "$SENTRY_AUTH_FILE")', 'mkdir -p leak', ...forms.map((form) => form.write), ''].join('\n');
  const sha = fixture.commit({ '.dockhand/setup.sh': setup }, message);
  const mirrorPath = await mirror.ensure(REPO, sha);
  return snapshots.resolve({ repo: REPO, mirrorPath, sha }).then(
    () => undefined,
    (caught: unknown) => (caught instanceof Error ? caught : new Error(String(caught))),
  );
}

/** The forms whose file is in any image the builds made (an archive member counts by its archive). */
async function formsInImages(forms: Form[]): Promise<string[]> {
  const found = new Set<string>();
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    const container = await docker.createContainer({ Image: image.Id, Cmd: ['true'], Labels: { 'dockhand.test': ownerId } });
    try {
      for (const form of forms) {
        const present = await container.getArchive({ path: form.path.replace(/!.*$/, '') }).then(
          () => true,
          () => false,
        );
        if (present) found.add(form.name);
      }
    } finally {
      await container.remove({ force: true });
    }
  }
  return [...found];
}

describe('setup secrets kept in the snapshot in any form (#31 item 2)', () => {
  it('fails every build naming each file and its form; no image holds any of them', async () => {
    const failures = [await buildWriting(KNOWN_BEFORE, 'setup.sh writes the forms the old search knew'), await buildWriting(LET_THROUGH_BEFORE, 'setup.sh writes the forms the old search let through')];
    const forms = [...KNOWN_BEFORE, ...LET_THROUGH_BEFORE];
    const inImage = await formsInImages(forms);
    writeReportPart({ part: 'setup-secrets', setup_secret_forms_in_image: inImage.length, setup_secret_forms_checked: forms.length });
    expect(inImage).toEqual([]);
    const unnamed: string[] = [];
    for (const [index, group] of [KNOWN_BEFORE, LET_THROUGH_BEFORE].entries()) {
      const message = failures[index]?.message ?? 'the build passed';
      for (const form of group) {
        const named = message.split(`${form.path} (SENTRY_AUTH, `)[1]?.split(/\)(, |$)/)[0];
        if (!named || !form.encoding.test(named)) unnamed.push(`${form.name}: ${named ?? `not named in "${message.slice(0, 300)}"`}`);
      }
      for (const form of secretForms(VALUE)) expect(message).not.toContain(form);
    }
    expect(unnamed).toEqual([]);
    // The build logs keep no form of the value either.
    const logs = readdirSync(join(dataDir, 'snapshot-logs')).map((file) => readFileSync(join(dataDir, 'snapshot-logs', file), 'utf8'));
    expect(logs.length).toBeGreaterThanOrEqual(2);
    for (const log of logs) for (const form of secretForms(VALUE)) expect(log).not.toContain(form);
  }, 900_000);
});
