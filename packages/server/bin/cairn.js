#!/usr/bin/env node
// The `cairn` command. There is no build step: tsx runs the TypeScript sources.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
process.exit();
