// Plan names to file names: an injective encoding that cannot leave the directory and that keeps two names
// apart even on a case-insensitive disk (macOS, Windows), where "Plan" and "plan" would share a file.
import { CairnError } from '../../errors.js';
import { ownerOfDerivedDoc } from '../../learning/documents.js';

/**
 * Longest encoded plan name; leaves room for suffixes within the usual 255-byte file name limit. A document kept
 * beside a plan (`<plan>#traces`, `<scope>#skills`) may be longer by its suffix (`%23traces`, 9 bytes): the limit
 * applies to the plan's part, so every plan that fits has a trace that fits (`.lock` temp files stay under 255).
 */
export const MAX_ENCODED_NAME_BYTES = 200;

// Kept as is: lower-case letters, digits, '-', '_' and '.'; everything else (':' included, which Windows
// refuses) becomes %XX of its UTF-8 bytes. '%' itself is encoded, so decoding is unambiguous.
const KEEP = /^[a-z0-9._-]$/;

export function encodePlanName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new CairnError(
      'invalid_argument',
      'A plan name must be a non-empty string, e.g. "biz:42:conv:7".',
      {
        field: 'name',
      },
    );
  }
  let out = '';
  for (const byte of new TextEncoder().encode(name)) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && KEEP.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  // A leading dot would make a hidden file, or "." / ".." the directory itself or its parent.
  if (out.startsWith('.')) out = `%2E${out.slice(1)}`;
  const owner = ownerOfDerivedDoc(name);
  const length = owner === null ? out.length : encodedLength(owner);
  if (length > MAX_ENCODED_NAME_BYTES) {
    throw new CairnError(
      'invalid_argument',
      `Plan name is too long for a file name (${length} bytes encoded, at most ${MAX_ENCODED_NAME_BYTES}; ` +
        'characters other than a-z 0-9 . _ - take 3 bytes each).',
      { field: 'name', encodedLength: length, max: MAX_ENCODED_NAME_BYTES },
    );
  }
  return out;
}

function encodedLength(name: string): number {
  let length = 0;
  for (const byte of new TextEncoder().encode(name)) {
    length += byte < 0x80 && KEEP.test(String.fromCharCode(byte)) ? 1 : 3;
  }
  return length + (name.startsWith('.') ? 2 : 0);
}

export function decodePlanName(encoded: string): string {
  return decodeURIComponent(encoded);
}
