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
