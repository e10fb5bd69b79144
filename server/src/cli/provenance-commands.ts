import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../config';
import { DockhandError } from '../errors';
import { DOCKHAND_BOT } from '../forge/push';
import { allowedSignersLine, loadSigningKey, SIGNING_KEY_FILE } from '../provenance/signing-key';
import { verifyCommit, type CommitCheck, type CommitCheckStep } from '../provenance/verify-commit';

/*
 * `dockhand signing-key`: the server's public key, in the forms forges and git take.
 * `dockhand verify commit <repo> <sha>`: each check on a pushed commit, named, and exit 1 when one fails.
 *
 * Both read the data dir's key (or DOCKHAND_SIGNING_KEY) on this host. `signing-key` makes the key
 * when the server has not yet (the server then uses the same one), so it can be registered on a
 * forge before the first push; `verify commit` never makes one: with no key it asks for
 * `--allowed-signers`, which is also how anyone without the server's files checks a commit.
 */

type Out = (line: string) => void;

export interface ProvenanceCommandDeps {
  out: Out;
  config: () => Config;
  /** Checks besides the commit's own (the attestation's, when that part is wired). */
  moreChecks?: CommitCheckStep[];
  /** The `verify` group (`verify-commands.ts`: `verify task`); made here when absent. */
  verify?: Command;
}

export function addProvenanceCommands(program: Command, deps: ProvenanceCommandDeps): void {
  program
    .command('signing-key')
    .description('print the server\'s public signing key (GitHub / GitLab "signing key") and its allowed_signers line (made on first use in the data dir, or DOCKHAND_SIGNING_KEY)')
    .option('--public', 'print only the public key line')
    .option('--allowed-signers', 'print only the allowed_signers line')
    .action((options: { public?: boolean; allowedSigners?: boolean }) => {
      const config = deps.config();
      const key = loadSigningKey(config.dataDir, config);
      const signers = allowedSignersLine(key, DOCKHAND_BOT.email);
      if (options.public) return deps.out(key.publicKeyOpenSsh);
      if (options.allowedSigners) return deps.out(signers);
      deps.out(`# the server's signing key ${key.keyId} (${key.source === 'setting' ? 'DOCKHAND_SIGNING_KEY' : `${key.privateKeyPath}`})`);
      deps.out('# public key: GitHub Settings > SSH and GPG keys > New SSH key, type "Signing Key"; GitLab Preferences > SSH Keys, usage "Signing"');
      deps.out(key.publicKeyOpenSsh);
      deps.out('# allowed_signers line (git config gpg.ssh.allowedSignersFile FILE; then git verify-commit SHA)');
      deps.out(signers);
    });

  const verify = deps.verify ?? program.command('verify').description('check provenance');
  verify
    .command('commit <repo> <sha>')
    .description('check a pushed commit: the server\'s SSH signature, its committer and trailers; exit 1 naming the failed checks')
    .option('--allowed-signers <file>', 'an allowed_signers file to check the signature against (default: made from the server\'s key on this host)')
    .option('--json', 'print the checks as JSON')
    .action(async (repo: string, sha: string, options: { allowedSigners?: string; json?: boolean }) => {
      const config = deps.config();
      const checks = await verifyCommit({ repoDir: repositoryDir(repo, config.dataDir), revision: sha, allowedSigners: allowedSigners(config, options.allowedSigners) }, deps.moreChecks ?? []);
      printChecks(checks, deps.out, options.json === true);
      const failed = checks.filter((check) => !check.ok).map((check) => check.check);
      // Exit 1 through the CLI's one error path (main.ts), naming what failed.
      if (failed.length > 0) throw new DockhandError('conflict', `${sha} is NOT verified: ${failed.join(', ')} failed`, { field: 'sha' });
    });
}

export function printChecks(checks: CommitCheck[], out: Out, json: boolean): void {
  if (json) return out(JSON.stringify({ ok: checks.every((check) => check.ok), checks }, null, 2));
  for (const check of checks) out(`${check.ok ? 'ok  ' : 'FAIL'} ${check.check}: ${check.detail}`);
  if (checks.every((check) => check.ok)) out('verified');
}

/** A path to a git repository, or the name of a local forge repository (`<data>/forge/<name>.git`). */
export function repositoryDir(repo: string, dataDir: string): string {
  const asPath = isAbsolute(repo) || repo.startsWith('.') ? resolve(repo) : undefined;
  if (asPath !== undefined) {
    if (!existsSync(asPath)) throw new DockhandError('not_found', `repo: no such directory ${asPath}`, { field: 'repo' });
    return asPath;
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(repo) || repo.includes('..')) {
    throw new DockhandError('bad_request', `repo: ${JSON.stringify(repo.slice(0, 100))} is neither a path (absolute, or starting with ".") nor a local forge repository name`, {
      field: 'repo',
      hint: 'for a commit on GitHub, fetch it into a clone and give the clone\'s path',
    });
  }
  const forgeDir = join(dataDir, 'forge', `${repo}.git`);
  if (!existsSync(join(forgeDir, 'HEAD'))) throw new DockhandError('not_found', `repo: the local forge has no repository ${repo} (${forgeDir})`, { field: 'repo', hint: 'give a path to a clone that holds the commit instead' });
  return forgeDir;
}

function allowedSigners(config: Config, file: string | undefined): string {
  if (file !== undefined) {
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      throw new DockhandError('bad_request', `--allowed-signers: cannot read ${file}`, { field: '--allowed-signers', cause: error });
    }
  }
  const ownKey = config.signingKey ?? join(config.dataDir, SIGNING_KEY_FILE);
  if (!existsSync(ownKey) || !statSync(ownKey).isFile()) {
    throw new DockhandError('not_found', `no signing key on this host (${ownKey}): nothing to check the signature against`, {
      field: '--allowed-signers',
      hint: 'give --allowed-signers FILE (the server\'s `dockhand signing-key --allowed-signers` line), or run this where the server\'s data dir (or DOCKHAND_SIGNING_KEY) is',
    });
  }
  return `${allowedSignersLine(loadSigningKey(config.dataDir, config), DOCKHAND_BOT.email)}\n`;
}
