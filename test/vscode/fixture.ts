/** The file the agent fixes in the buggy-calc fixture in the extension's end-to-end tests. */
export const FIXED_FILE = 'src/calc.js';
