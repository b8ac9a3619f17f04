// The server contract against the Durable Object host (apps/cloudflare) in workerd.
import { runContract } from './suite.js';

runContract('workerd');
