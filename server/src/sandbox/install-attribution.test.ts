import { describe, expect, it } from 'vitest';
import { describeInstallFailure, diagnoseInstall, InstallTranscript, REFUSED_MARKER } from './install-failure';

/*
 * Which package asked for a host the egress proxy refused, and which requirement pip could not
 * find where: read from the install's transcript, in which the build marks each refusal when it
 * happens (InstallTranscript).
 */

describe('a refused host is attributed to the package whose script asked for it', () => {
  it('npm runs foreground scripts one at a time: the script running at the refusal asked, not the one that failed', () => {
    const refused: string[] = [];
    const transcript = new InstallTranscript(refused);
    transcript.push('> puppeteer@21.0.0 postinstall\n> node install.mjs\n');
    refused.push('storage.googleapis.com:443');
    transcript.push('ERROR: Failed to set up Chrome r115! Set "PUPPETEER_SKIP_DOWNLOAD" env variable to skip download.\n');
    transcript.push('> esbuild@0.19.0 postinstall\n> node install.js\n');
    transcript.push('Error: Expected "0.19.0" but got "0.18.0"\nnpm error code 1\nnpm error path /workspace/node_modules/esbuild\nnpm error command failed\n');
    expect(transcript.toString()).toContain(`${REFUSED_MARKER}storage.googleapis.com:443\n`);

    const diagnosis = diagnoseInstall(transcript.toString(), refused);
    expect(diagnosis).toMatchObject({
      packageName: 'esbuild',
      script: 'postinstall',
      blockedHosts: ['storage.googleapis.com'],
      hostRequesters: [{ host: 'storage.googleapis.com', packageName: 'puppeteer', script: 'postinstall' }],
    });
    const { message, hint } = describeInstallFailure({ exitCode: 1, tail: '', diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toMatch(
      /^snapshot build failed \(exit 1\): the postinstall script of package "esbuild" failed; the postinstall script of package "puppeteer" tried to reach storage\.googleapis\.com, which the egress allowlist does not allow/,
    );
    expect(hint).toContain('`skipScripts: [esbuild, puppeteer]`');
  });

  it('pnpm runs scripts side by side: the one that printed Failed failed, and the host goes to the script running at the refusal', () => {
    const refused = ['storage.googleapis.com:443'];
    const output = [
      'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall$ node install.js',
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall$ node install.mjs',
      `${REFUSED_MARKER}storage.googleapis.com:443`,
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: ERROR: Failed to set up Chrome r115!',
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: Failed',
      'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall: Done',
      ' ELIFECYCLE  Command failed with exit code 1.',
    ].join('\n');
    const diagnosis = diagnoseInstall(output, refused);
    expect(diagnosis).toMatchObject({ packageName: 'puppeteer', script: 'postinstall', hostRequesters: [{ host: 'storage.googleapis.com', packageName: 'puppeteer' }] });
    const { message, hint } = describeInstallFailure({ exitCode: 1, tail: '', diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toContain('the postinstall script of package "puppeteer" failed; it tried to reach storage.googleapis.com');
    expect(message).not.toContain('esbuild');
    expect(hint).toContain('`skipScripts: [puppeteer]`');
  });

  it('pnpm: a script started after the one that asked is running too at the refusal; the one whose output after it says so asked (#32)', () => {
    const refused = ['storage.googleapis.com:443'];
    const output = [
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall$ node install.mjs',
      'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall$ node install.js',
      `${REFUSED_MARKER}storage.googleapis.com:443`,
      'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall: Error: Expected "0.19.0" but got "0.18.0"',
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: ERROR: Failed to set up Chrome r115! Set "PUPPETEER_SKIP_DOWNLOAD" env variable to skip download.',
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: Error: tunneling socket could not be established, statusCode=403',
      'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: Done',
      'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall: Failed',
      ' ELIFECYCLE  Command failed with exit code 1.',
    ].join('\n');
    const diagnosis = diagnoseInstall(output, refused);
    expect(diagnosis).toMatchObject({ packageName: 'esbuild', script: 'postinstall', hostRequesters: [{ host: 'storage.googleapis.com', packageName: 'puppeteer', script: 'postinstall' }] });
    const { message } = describeInstallFailure({ exitCode: 1, tail: '', diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toContain('the postinstall script of package "esbuild" failed; the postinstall script of package "puppeteer" tried to reach storage.googleapis.com');
    // A script that had ended before the refusal asked for nothing then.
    const ended = diagnoseInstall(
      [
        'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall$ node install.mjs',
        'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall$ node install.js',
        'node_modules/.pnpm/esbuild@0.19.0/node_modules/esbuild postinstall: Done',
        `${REFUSED_MARKER}storage.googleapis.com:443`,
        'node_modules/.pnpm/puppeteer@21.0.0/node_modules/puppeteer postinstall: Done',
      ].join('\n'),
      refused,
    );
    expect(ended.hostRequesters).toEqual([{ host: 'storage.googleapis.com', packageName: 'puppeteer', script: 'postinstall' }]);
  });

  it('without a marker, the output line that names the host tells whose script it was', () => {
    const output = ['> sharp@0.32.0 install', '> node install/libvips', 'sharp: Downloading https://github.com/lovell/sharp-libvips/releases/download/v8.14.2/libvips.tar.br', 'sharp: Installation error: tunneling socket could not be established, statusCode=403'].join('\n');
    const diagnosis = diagnoseInstall(output, ['github.com:443']);
    expect(diagnosis.hostRequesters).toEqual([{ host: 'github.com', packageName: 'sharp', script: 'install' }]);
    // Nothing said which package failed: the one whose script was refused is named.
    expect(diagnosis.packageName).toBe('sharp');
  });
});

describe('a missing Python requirement names the index it was looked up in', () => {
  const output = 'ERROR: Could not find a version that satisfies the requirement pytest-randomly (from versions: none)\nERROR: No matching distribution found for pytest-randomly\n';

  it('with no index configured, says so and how to configure one', () => {
    const diagnosis = diagnoseInstall(output, []);
    expect(diagnosis.missingRequirement).toBe('pytest-randomly');
    const { message, hint } = describeInstallFailure({ exitCode: 1, tail: output, diagnosis, logPath: '/l.log', setupFailed: false, pipIndex: null });
    expect(message).toMatch(/^snapshot build failed \(exit 1\): the Python requirement "pytest-randomly" is not in the base image and pip looked for it in no index: no package index is configured\. To fix: set DOCKHAND_PIP_INDEX_URL/);
    expect(hint).toMatch(/^set DOCKHAND_PIP_INDEX_URL to your Python package index/);
  });

  it('with an index, names it', () => {
    const diagnosis = diagnoseInstall(output, []);
    const { message, hint } = describeInstallFailure({ exitCode: 1, tail: output, diagnosis, logPath: '/l.log', setupFailed: false, pipIndex: 'https://pypi.corp.example/simple' });
    expect(message).toContain('pip looked for it in the package index https://pypi.corp.example/simple');
    expect(hint).toMatch(/^check that https:\/\/pypi\.corp\.example\/simple serves "pytest-randomly"/);
  });
});
