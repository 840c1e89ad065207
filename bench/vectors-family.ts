/**
 * Silk's vector family (node/indexes/vector-index.ts VectorIndexes) as bench/vectors.ts and bench/vector-memory.ts
 * measure it: a temporary LMDB environment whose `vectors` database holds each base row as the store holds a
 * `V::Digit` record (node/record-codec.ts encodeRecord; ID = row + 1), a record source that reads vectors from it as
 * the store's does (an exact scan of a restricted search reads them there: hnswlib keeps the only copy in memory),
 * and the index built by putting every row in one write transaction.
 */
import { open } from "lmdb";
import type { IndexRecordSource } from "../node/index-family.js";
import { VectorIndexes } from "../node/indexes/vector-index.js";
import { idKey } from "../node/keys.js";
import { encodeRecord, storedVectorInto } from "../node/record-codec.js";
import { VECTOR_FIELD, type VectorIndexDefinition, type VectorMetric } from "../protocol/indexes.js";

export function definition(metric: VectorMetric): VectorIndexDefinition {
  return { family: "vector", kind: "vector", label: "Digit", field: VECTOR_FIELD, name: `Digit.vector_${metric}`, metric };
}

export interface Family {
  readonly indexes: VectorIndexes;
  /** Builds the index of `metric` over every row, in one write transaction (the records are already stored). */
  build(metric: VectorMetric): void;
}

/** The rows stored as records under `path` (written here, before any index), and a family over them. */
export function openFamily(path: string, base: readonly Float32Array[]): Family {
  const env = open({ path });
  const meta = env.openDB({ name: "meta" });
  const vectors = env.openDB<Buffer, Buffer>({ name: "vectors", keyEncoding: "binary", encoding: "binary" });
  const stored = base.map((pixels) => Float64Array.from(pixels));
  env.transactionSync(() => {
    stored.forEach((vector, row) => {
      const id = BigInt(row + 1);
      vectors.putSync(idKey(id), encodeRecord({ kind: "vector", id, label: "Digit", vector, props: {} }));
    });
  });
  const source: IndexRecordSource = {
    record: () => undefined,
    scan: () => ({ records: [], last: undefined, done: true }),
    hasLabel: () => false,
    vectorInto: (_kind, id, _field, into) => {
      const bytes = vectors.getBinaryFast(idKey(id));
      return bytes !== undefined && storedVectorInto(bytes, into) === true;
    },
  };
  const indexes = new VectorIndexes(meta, source);
  return {
    indexes,
    build(metric) {
      const index = definition(metric);
      indexes.load(index, "active");
      env.transactionSync(() => {
        stored.forEach((vector, row) => indexes.put(index, { id: BigInt(row + 1), props: {}, vector }, undefined));
        indexes.flush();
      });
      indexes.commit();
    },
  };
}
