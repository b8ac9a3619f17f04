// The words benchmark task titles are made of, so every benchmark's plans read alike (and tokenize alike).
export const TITLE_WORDS = [
  'migrate',
  'billing',
  'schema',
  'review',
  'tests',
  'deploy',
  'customer',
  'export',
  'retry',
  'docs',
] as const;
