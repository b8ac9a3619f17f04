// The wire constants and codecs shared with the client (packages/core/src/protocol.ts), from @cairn/core/protocol,
// the platform-neutral entry for servers and other implementations of the protocol.
export type { CairnWireMessage } from '@cairn/core/protocol';
export {
  AUTH_PERMISSION_DENIED,
  CairnMessageType,
  CloseCode,
  decodeCairnBody,
  decodeCairnMessage,
  encodeAck,
  encodeAckRequest,
  encodeCairnError,
  encodeKeepAlive,
  isAckMessageType,
  MessageType,
  SUBPROTOCOL,
  SYNC_PATH_PREFIX,
  SyncMessageType,
  syncPath,
  TOKEN_SUBPROTOCOL_PREFIX,
} from '@cairn/core/protocol';

import { SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from '@cairn/core/protocol';

/** The token of a WebSocket upgrade: `?token=` or the subprotocol `cairn.token.<jwt>`, whatever the host. */
export function tokenOfUpgrade(url: URL, protocols: string | null | undefined): string | null {
  const query = url.searchParams.get('token');
  if (query) return query;
  for (const protocol of protocols?.split(',') ?? []) {
    const p = protocol.trim();
    if (p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) return p.slice(TOKEN_SUBPROTOCOL_PREFIX.length);
  }
  return null;
}

/** The subprotocol a server answers with: Cairn's when offered, never the token's own (it would echo the token). */
export function chooseSubprotocol(offered: Iterable<string>): string | null {
  const all = [...offered];
  if (all.includes(SUBPROTOCOL)) return SUBPROTOCOL;
  return all.find((p) => !p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) ?? null;
}
