// Counting tokens for the render budget. The default is an estimate that needs no tables, so the root entry
// stays small; pass a real tokenizer (`cl100kTokenizer` from `@cairn/core/tokenizer`, or your model's own)
// to count exactly.

/**
 * Counts tokens for render budgets. The default estimates; `cl100kTokenizer` from `@cairn/core/tokenizer` (or
 * your model's own) counts exactly.
 */
export interface Tokenizer {
  /** The number of tokens `text` costs. */
  count(text: string): number;
  /**
   * Set when `count(text)` is `Math.ceil(text.length / charsPerToken)`. The budget then adds up the
   * characters of the pieces it tries, which is exact, rather than each piece's rounded-up count.
   */
  readonly charsPerToken?: number;
}

const CHARS_PER_TOKEN = 2.5;

/**
 * One token per 2.5 characters, rounded up. Rendered plans measured 3.1 to 4 characters per cl100k token (ids
 * and punctuation tokenize worse than prose), so this overestimates by about a fifth: a budget it enforces
 * holds under a real tokenizer too, at the cost of showing a little less.
 */
export const approximateTokenizer: Tokenizer = {
  charsPerToken: CHARS_PER_TOKEN,
  count: (text) => Math.ceil(text.length / CHARS_PER_TOKEN),
};

/** What `maxTokens` is counted with when no tokenizer is given. */
export const defaultTokenizer: Tokenizer = approximateTokenizer;
