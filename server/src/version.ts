import serverPackage from '../package.json';

/** The server's version, from its package.json (bundled in by esbuild); `/healthz` tells clients. */
export const SERVER_VERSION: string = serverPackage.version;
