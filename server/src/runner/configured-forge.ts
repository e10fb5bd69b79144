import { readFileSync } from 'node:fs';
import type { Config } from '../config';
import { DockhandError } from '../errors';
import { GitHubForge } from '../forge';
import { appInstallationTokens, staticToken, type GitHubTokenProvider } from '../forge/github-auth';

/**
 * The forge `DOCKHAND_FORGE` names, when it is not the local one: GitHub, with a GitHub App that
 * mints a short-lived token scoped to one repository per push (`DOCKHAND_GITHUB_APP_ID` and
 * `DOCKHAND_GITHUB_APP_KEY_FILE`, optionally `DOCKHAND_GITHUB_INSTALLATION_ID`), else the static
 * `DOCKHAND_PUSH_TOKEN`. Neither: a start-up error naming both ways, never a silent local forge.
 * Repositories are registered under their GitHub name (`repo add acme/shop --from https://github.com/acme/shop`).
 */
export function configuredForge(config: Config): GitHubForge | undefined {
  if (config.forge.kind !== 'github') return undefined;
  const { githubApiUrl, githubAppId, githubAppKeyFile, githubInstallationId, pushToken } = config.forge;
  let tokens: GitHubTokenProvider;
  if (githubAppId !== undefined || githubAppKeyFile !== undefined) {
    if (githubAppId === undefined || githubAppKeyFile === undefined) {
      const missing = githubAppId === undefined ? 'DOCKHAND_GITHUB_APP_ID' : 'DOCKHAND_GITHUB_APP_KEY_FILE';
      throw new DockhandError('bad_request', `${missing}: a GitHub App needs both DOCKHAND_GITHUB_APP_ID and DOCKHAND_GITHUB_APP_KEY_FILE`, {
        field: missing,
        hint: `set ${missing}, or unset the other to use DOCKHAND_PUSH_TOKEN`,
      });
    }
    let privateKey: string;
    try {
      privateKey = readFileSync(githubAppKeyFile, 'utf8');
    } catch (error) {
      throw new DockhandError('bad_request', `DOCKHAND_GITHUB_APP_KEY_FILE: cannot read ${githubAppKeyFile} (${error instanceof Error ? error.message : String(error)})`, {
        field: 'DOCKHAND_GITHUB_APP_KEY_FILE',
        hint: "point it at the App's private key (.pem), readable by the server's user only",
      });
    }
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(privateKey)) {
      throw new DockhandError('bad_request', `DOCKHAND_GITHUB_APP_KEY_FILE: ${githubAppKeyFile} holds no PEM private key`, {
        field: 'DOCKHAND_GITHUB_APP_KEY_FILE',
        hint: "download the App's private key from its settings page (a .pem file) and point the variable at it",
      });
    }
    tokens = appInstallationTokens({ appId: githubAppId, privateKey, ...(githubInstallationId !== undefined ? { installationId: githubInstallationId } : {}), ...(githubApiUrl ? { baseUrl: githubApiUrl } : {}) });
  } else if (pushToken) {
    tokens = staticToken(pushToken);
  } else {
    throw new DockhandError('bad_request', 'DOCKHAND_FORGE=github needs credentials: a GitHub App (DOCKHAND_GITHUB_APP_ID and DOCKHAND_GITHUB_APP_KEY_FILE) or a token (DOCKHAND_PUSH_TOKEN)', {
      field: 'DOCKHAND_PUSH_TOKEN',
      hint: 'a GitHub App is preferred: its tokens last an hour and reach one repository; a static token should be fine-grained to the repositories, with contents and pull requests write',
    });
  }
  return new GitHubForge({ tokens, ...(githubApiUrl ? { baseUrl: githubApiUrl, webUrl: webRootOf(githubApiUrl) } : {}) });
}

/** GitHub Enterprise serves the API under https://HOST/api/v3 and the web (clone URLs) at https://HOST. */
function webRootOf(apiUrl: string): string {
  const url = new URL(apiUrl);
  return url.hostname === 'api.github.com' ? 'https://github.com' : `${url.protocol}//${url.host}`;
}
