// Whether a client's update arrived whole, checked before it is applied and without building its structs. Yjs
// reads every struct of an update before it integrates any (a cut there changes nothing), but applies the delete
// set as it reads it: an update cut inside its delete set would be applied in part. So this walks the update (Yjs'
// V1 encoding, the one y-websocket sends) the way Yjs reads it, skipping over each struct's content, to the end of
// its delete set. It throws where Yjs' decoding would (a lib0 "unexpected end of array"), and at a deletion of length
// 0, which Yjs never encodes and a replica lacking the deleted structs fails to hold back (so it is never relayed).
import * as decoding from 'lib0/decoding';

/**
 * Throws unless `update` reads to the end of its delete set, as Y.applyUpdate would read it, and deletes no empty
 * range.
 */
export function checkWholeUpdate(update: Uint8Array): void {
  const decoder = decoding.createDecoder(update);
  const clients = decoding.readVarUint(decoder);
  for (let i = 0; i < clients; i++) {
    const structs = decoding.readVarUint(decoder);
    decoding.readVarUint(decoder); // client
    decoding.readVarUint(decoder); // clock
    for (let j = 0; j < structs; j++) skipStruct(decoder);
  }
  const deleteClients = decoding.readVarUint(decoder);
  for (let i = 0; i < deleteClients; i++) {
    decoding.readVarUint(decoder); // client
    const ranges = decoding.readVarUint(decoder);
    for (let j = 0; j < ranges; j++) {
      decoding.readVarUint(decoder); // clock
      // Yjs never encodes an empty range, and a replica that holds it back (it lacks the deleted structs) fails
      // to store it: refused here, it can never be relayed.
      if (decoding.readVarUint(decoder) === 0) throw new Error('a deletion of length 0');
    }
  }
}

const ORIGIN = 0b1000_0000;
const RIGHT_ORIGIN = 0b0100_0000;
const PARENT_SUB = 0b0010_0000;

// Yjs' readClientsStructRefs and readItemContent, reading the same fields in the same order.
function skipStruct(decoder: decoding.Decoder): void {
  const info = decoding.readUint8(decoder);
  const ref = info & 0b1_1111;
  if (ref === 0 || ref === 10) {
    decoding.readVarUint(decoder); // GC or Skip: a length
    return;
  }
  if (info & ORIGIN) skipId(decoder);
  if (info & RIGHT_ORIGIN) skipId(decoder);
  if ((info & (ORIGIN | RIGHT_ORIGIN)) === 0) {
    if (decoding.readVarUint(decoder) === 1)
      skipString(decoder); // a root type's name
    else skipId(decoder); // the parent item
    if (info & PARENT_SUB) skipString(decoder);
  }
  switch (ref) {
    case 1: // ContentDeleted
      decoding.readVarUint(decoder);
      return;
    case 2: // ContentJSON
      for (let n = decoding.readVarUint(decoder); n > 0; n--) skipString(decoder);
      return;
    case 3: // ContentBinary
    case 4: // ContentString
    case 5: // ContentEmbed
      skipString(decoder);
      return;
    case 6: // ContentFormat: key, value
      skipString(decoder);
      skipString(decoder);
      return;
    case 7: {
      // ContentType: YArray 0, YMap 1, YText 2, YXmlElement 3 (a name), YXmlFragment 4, YXmlHook 5 (a name), YXmlText 6
      const type = decoding.readVarUint(decoder);
      if (type > 6) throw new Error(`unknown type ${type}`);
      if (type === 3 || type === 5) skipString(decoder);
      return;
    }
    case 8: // ContentAny
      for (let n = decoding.readVarUint(decoder); n > 0; n--) skipAny(decoder);
      return;
    case 9: // ContentDoc: guid, options
      skipString(decoder);
      skipAny(decoder);
      return;
    default:
      throw new Error(`unknown struct content ${ref}`);
  }
}

function skipId(decoder: decoding.Decoder): void {
  decoding.readVarUint(decoder);
  decoding.readVarUint(decoder);
}

/** A length-prefixed run of bytes (a string, a JSON text, a Uint8Array). */
function skipString(decoder: decoding.Decoder): void {
  skipBytes(decoder, decoding.readVarUint(decoder));
}

// lib0 would read past the end of the update's view, into the rest of its buffer, and fail only at its next number.
function skipBytes(decoder: decoding.Decoder, length: number): void {
  if (decoder.pos + length > decoder.arr.length) throw new Error('Unexpected end of array');
  decoder.pos += length;
}

// lib0's readAny, by its type tags.
function skipAny(decoder: decoding.Decoder): void {
  const tag = decoding.readUint8(decoder);
  switch (tag) {
    case 127: // undefined
    case 126: // null
    case 121: // false
    case 120: // true
      return;
    case 125:
      decoding.readVarInt(decoder);
      return;
    case 124: // float32
      skipBytes(decoder, 4);
      return;
    case 123: // float64
    case 122: // bigint64
      skipBytes(decoder, 8);
      return;
    case 119: // string
    case 116: // Uint8Array
      skipString(decoder);
      return;
    case 118: // object: key, value pairs
      for (let n = decoding.readVarUint(decoder); n > 0; n--) {
        skipString(decoder);
        skipAny(decoder);
      }
      return;
    case 117: // array
      for (let n = decoding.readVarUint(decoder); n > 0; n--) skipAny(decoder);
      return;
    default:
      throw new Error(`unknown value type ${tag}`);
  }
}
