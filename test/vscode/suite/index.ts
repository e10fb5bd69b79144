import { resolve } from 'node:path';
import Mocha from 'mocha';

/** Entry point VS Code calls in the extension host (`extensionTestsPath`): runs the mocha suite. */
export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, timeout: 60_000 });
  mocha.addFile(resolve(__dirname, 'extension.suite.cjs'));
  return new Promise((done, fail) => {
    mocha.run((failures) => (failures > 0 ? fail(new Error(`${failures} extension-host test(s) failed`)) : done()));
  });
}
