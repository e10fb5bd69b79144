import { defineConfig } from 'vitest/config';

/** In every project: removes the scratch directories test/support/temporary-dirs.ts made, as each test file ends. */
const SETUP = 'test/support/vitest-setup.ts';

/**
 * One runner, three projects, run one after another (groupOrder) so that the Docker-heavy ones
 * never compete with each other for the machine's cores:
 *  - unit:        *.test.ts next to the code; no Docker, no network, fast.
 *  - integration: *.int.test.ts; real Docker + gVisor, real git, real SQLite. Two files at a time.
 *  - e2e:         test/e2e/**; crosses the pieces (server + sandbox + replay model + browser).
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          include: ['{protocol,server,extension,webview-ui}/src/**/*.test.ts', 'scripts/**/*.test.ts', 'bench/census/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
          environment: 'node',
          setupFiles: [SETUP],
          // Unit tests assert behaviour, not milliseconds: several run real git children, which
          // on a loaded 2-core machine (load 15-20, measured with eight people at work) take
          // seconds each, and vitest's 5 s default failed them for time alone (readiness.test,
          // loop.test, comments.test: 57 of 1,917 at load 20, every one a timeout).
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['{protocol,server,extension,webview-ui}/src/**/*.int.test.ts'],
          setupFiles: [SETUP],
          // Two files at once: most of an integration file's time is waiting on gVisor, git and
          // installs, so two overlap well on 2 cores (measured at load 17: 2,466 s wall for
          // 4,229 s of files). Each file owns its containers (labels), repositories, schemas and
          // ports. CI was 68 min with one file at a time (stop 40).
          maxWorkers: 2,
          testTimeout: 180_000,
          hookTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'e2e',
          sequence: { groupOrder: 2 },
          include: ['test/e2e/**/*.test.ts', 'test/corpus/**/*.test.ts', 'test/attacks/**/*.test.ts'],
          setupFiles: [SETUP],
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
