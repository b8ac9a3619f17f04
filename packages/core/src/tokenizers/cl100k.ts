// OpenAI's cl100k_base BPE tokenizer (pure JavaScript, runs in a browser), behind its own subpath
// (`@cairn/core/tokenizer`) because its tables are about 430 KiB min+gzip: six times the rest of the root entry.
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import type { Tokenizer } from '../render/tokenizer.js';

/**
 * Chosen over o200k_base because it is well under half the size (about 430 KiB gzipped against 1 MiB) while
 * counting within a few percent of it for prose; no public tokenizer matches every model, so a budget should
 * keep a margin either way.
 */
export const cl100kTokenizer: Tokenizer = { count: (text) => (text === '' ? 0 : countTokens(text)) };
