// The wire constants and codecs shared with the client (packages/core/src/protocol.ts). Imported through the
// websocket adapter's entry until @cairn/core exports them from a platform-neutral entry of its own.
export type { CairnWireMessage } from '@cairn/core/websocket';
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
} from '@cairn/core/websocket';
