// A Cloudflare Worker that hosts Cairn plans: one Durable Object per plan. This is all a user's worker needs;
// wrangler.jsonc binds the object and sets the variables.
export { CairnPlanObject, cairnWorker as default } from '@cairn/server/cloudflare';
