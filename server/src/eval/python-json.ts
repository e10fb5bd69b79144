/*
 * JSON text exactly as Python's `json.dumps` writes it with its defaults (`", "` and `": "`
 * separators, `ensure_ascii=True`): that is how SWE-bench writes its instance and prediction
 * files, so a file we write is byte-for-byte what SWE-bench's own tools would have written.
 */

/** `json.dumps(value)`: non-ASCII and DEL as lowercase `\uXXXX` (UTF-16 units, so pairs stay pairs). */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return asciiOnly(JSON.stringify(value));
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pythonFloat(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, inner]) => inner !== undefined);
    return `{${entries.map(([key, inner]) => `${asciiOnly(JSON.stringify(key))}: ${pythonJsonDumps(inner)}`).join(', ')}}`;
  }
  throw new TypeError(`cannot write a ${typeof value} as JSON`);
}

function asciiOnly(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Python's repr of a float: always a decimal point or an exponent (1.0, 1e-07). */
function pythonFloat(value: number): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  const text = String(value);
  if (/e/.test(text)) return text.replace(/e([+-])(\d)$/, 'e$10$2');
  return text.includes('.') ? text : `${text}.0`;
}
