// The types of generated-files.mjs, for the scripts written in TypeScript.
export function updateGenerated(files: Iterable<[path: string, text: string]>, check: boolean): string[];
