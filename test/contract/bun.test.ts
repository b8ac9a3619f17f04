// The server contract against `cairn serve` under Bun (from the workspace's sources).
import { runContract } from './suite.js';

runContract('bun');
