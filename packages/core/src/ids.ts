// Task ids: short, random and collision-checked. Random rather than sequential because agents create tasks
// concurrently on different replicas, where sequential ids collide.

/** Crockford-style base32 without look-alikes: ids are read aloud and typed by people and models. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const ID_LENGTH = 7;

export type Random = () => number;

/** Crypto randomness, drawn in blocks: one getRandomValues call per character was most of an add's cost. */
const pool = new Uint32Array(256);
let poolUsed = pool.length;
export const cryptoRandom: Random = () => {
  if (poolUsed === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolUsed = 0;
  }
  return pool[poolUsed++]! / 2 ** 32;
};

/** A new id that `taken` does not hold yet. 32^7 ≈ 3.4e10 ids, so concurrent collisions are negligible. */
export function newTaskId(taken: (id: string) => boolean, random: Random = cryptoRandom): string {
  for (;;) {
    let id = '';
    for (let i = 0; i < ID_LENGTH; i++) id += ALPHABET[Math.floor(random() * ALPHABET.length)];
    if (!taken(id)) return id;
  }
}
