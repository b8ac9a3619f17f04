// The server contract against `cairn serve` under Node (from the workspace's sources).
import { runContract } from './suite.js';

runContract('node');
