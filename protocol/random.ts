/**
 * mulberry32: a tiny, well-mixed 32-bit pseudo-random generator in [0, 1). The same seed gives the same sequence on
 * every machine: HNSW level draws (node/indexes/hnsw.ts), benchmark samples and test data use it to be reproducible. Not for
 * anything that must be unpredictable.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
