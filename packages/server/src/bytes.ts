// Byte helpers on Web-standard types (no Buffer), for the hub and the HTTP API wherever they run.

const utf8 = new TextEncoder();

/** The UTF-8 length of a string. */
export function utf8Bytes(text: string): number {
  return utf8.encode(text).byteLength;
}

/** Whether `needle` (not empty) occurs in `haystack`: the first byte found natively, the rest compared. */
export function includesBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (let at = haystack.indexOf(first); at >= 0 && at <= last; at = haystack.indexOf(first, at + 1)) {
    let i = 1;
    while (i < needle.length && haystack[at + i] === needle[i]) i++;
    if (i === needle.length) return true;
  }
  return false;
}
