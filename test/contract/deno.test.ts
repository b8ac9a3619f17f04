// The server contract against `cairn serve` under Deno (`deno run -A`, from the workspace's sources).
import { runContract } from './suite.js';

runContract('deno');
