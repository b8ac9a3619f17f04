// The two clients the edge tests watch a plan with: a writer on Cairn's client (it is acknowledged) and a
// read-only stock y-websocket client (what any Yjs app would connect with), both synced before the test writes.
import * as Y from 'yjs';
import { cairnClient, stockClient, whenProviderSynced } from '../../../packages/server/test/helpers.js';

/** A writer (`write` token) and a stock reader (`read` token) of `plan` on the server at `url`, both synced. */
export async function writerAndStockReader(
  url: string,
  plan: string,
  tokens: { write: string; read: string },
) {
  const writerDoc = new Y.Doc();
  const writer = cairnClient(url, plan, writerDoc, { token: tokens.write });
  await writer.whenSynced();
  const readerDoc = new Y.Doc();
  const reader = stockClient(url, plan, readerDoc, { token: tokens.read });
  await whenProviderSynced(reader);
  return { writerDoc, writer, readerDoc, reader };
}
