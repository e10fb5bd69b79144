import { createSign } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { z } from 'zod';
import { DockhandError } from '../errors';

/**
 * Tokens for GitHub. Two kinds:
 *
 * - a fine-grained personal access token, limited by whoever created it (`staticToken`);
 * - a GitHub App installation token minted per push (`appInstallationTokens`): scoped to the one
 *   repository, with `contents: write` (push a branch) and `pull_requests: write` (open the
 *   draft PR), valid one hour. `contents: write` does not by itself allow merging a PR; branch
 *   protection on the default branch is what stops a direct push there, so keep it on.
 */

export interface GitHubRepo {
  owner: string;
  name: string;
}

export interface GitHubTokenProvider {
  /** A token allowed to push branches and open PRs in this one repository. */
  token(repo: GitHubRepo): Promise<string>;
}

export function staticToken(token: string): GitHubTokenProvider {
  if (token.trim() === '') throw new DockhandError('bad_request', 'token: must not be empty', { field: 'token' });
  return { token: async () => token };
}

export interface GitHubAppOptions {
  appId: string | number;
  /** PEM private key of the App. */
  privateKey: string;
  /** Skips the lookup when the installation is known. */
  installationId?: number;
  baseUrl?: string;
  /** For tests: a fetch that never touches the network. */
  fetch?: typeof fetch;
  now?: () => Date;
}

/** RS256 JWT that authenticates as the App (GitHub allows at most 10 minutes). */
export function appJwt(appId: string | number, privateKey: string, now: Date = new Date()): string {
  const seconds = Math.floor(now.getTime() / 1000);
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  // iat 60 s in the past tolerates clock drift, as GitHub recommends.
  const unsigned = `${encode({ alg: 'RS256', typ: 'JWT' })}.${encode({ iat: seconds - 60, exp: seconds + 540, iss: String(appId) })}`;
  const signature = createSign('RSA-SHA256').update(unsigned).sign(privateKey).toString('base64url');
  return `${unsigned}.${signature}`;
}

const InstallationToken = z.object({ token: z.string().min(1), expires_at: z.string() });
const Installation = z.object({ id: z.number().int() });

export const PUSH_PERMISSIONS = { contents: 'write', pull_requests: 'write', metadata: 'read' } as const;

export function appInstallationTokens(options: GitHubAppOptions): GitHubTokenProvider {
  return {
    async token(repo) {
      const app = new Octokit({
        auth: appJwt(options.appId, options.privateKey, options.now?.() ?? new Date()),
        ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
        ...(options.fetch ? { request: { fetch: options.fetch } } : {}),
      });
      let installationId = options.installationId;
      if (installationId === undefined) {
        const found = await app.request('GET /repos/{owner}/{repo}/installation', { owner: repo.owner, repo: repo.name });
        installationId = Installation.parse(found.data).id;
      }
      const minted = await app.request('POST /app/installations/{installation_id}/access_tokens', {
        installation_id: installationId,
        repositories: [repo.name],
        permissions: PUSH_PERMISSIONS,
      });
      return InstallationToken.parse(minted.data).token;
    },
  };
}
