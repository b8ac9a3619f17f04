#!/usr/bin/env node
// The `cairn` command, on the built CLI (dist/). In this repository the same file runs the TypeScript sources:
// `node --conditions=@cairn/source --import tsx packages/server/bin/cairn.js` (package.json "imports": "#cli").
let cli;
try {
  cli = await import('#cli');
} catch (error) {
  // A missing package fails while loading, before the CLI can say anything: say what to do about it.
  const missing = /Cannot find (?:package|module) '([^']+)'/.exec(error?.message ?? '')?.[1];
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !missing) throw error;
  process.stderr.write(
    /^[./]/.test(missing)
      ? `cairn: ${missing} is missing: in a clone of the repository, run \`pnpm build\` first.\n`
      : `cairn: the package "${missing}" is not installed; @cairn/server needs it beside it: npm install ${missing}\n`,
  );
  process.exit(1);
}
process.exitCode = await cli.main(process.argv.slice(2));
process.exit();
