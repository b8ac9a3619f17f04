// Plan names to file names: an injective encoding that cannot leave the directory and that keeps two names
// apart even on a case-insensitive disk (macOS, Windows), where "Plan" and "plan" would share a file.
import { CairnError } from '../../errors.js';

/** Longest encoded name; leaves room for suffixes within the usual 255-byte file name limit. */
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
  if (out.length > MAX_ENCODED_NAME_BYTES) {
    throw new CairnError(
      'invalid_argument',
      `Plan name is too long for a file name (${out.length} bytes encoded, at most ${MAX_ENCODED_NAME_BYTES}; ` +
        'characters other than a-z 0-9 . _ - take 3 bytes each).',
      { field: 'name', encodedLength: out.length, max: MAX_ENCODED_NAME_BYTES },
    );
  }
  return out;
}

export function decodePlanName(encoded: string): string {
  return decodeURIComponent(encoded);
}
