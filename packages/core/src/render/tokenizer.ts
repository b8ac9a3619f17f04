// Counting tokens for the render budget. The default is a real BPE tokenizer (cl100k_base, pure JavaScript, so
// it runs in a browser); pass your model's own to match it exactly.
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';

export interface Tokenizer {
  /** The number of tokens `text` costs. */
  count(text: string): number;
}

/**
 * OpenAI's cl100k_base encoding. Chosen over o200k_base because it is well under half the size (about 430 KiB
 * gzipped against 1 MiB) while counting within a few percent of it for prose; no public tokenizer matches every
 * model, so a budget should keep a margin either way.
 */
export const defaultTokenizer: Tokenizer = { count: (text) => (text === '' ? 0 : countTokens(text)) };

/** About four characters a token: cruder but far cheaper, for very large plans rendered often. */
export const approximateTokenizer: Tokenizer = { count: (text) => Math.ceil(text.length / 4) };
