/**
 * The text benchmark's baseline (bench/text.ts): a plain in-memory BM25 over already-analysed documents, with the
 * same formula as node/text-index.ts (Lucene's idf, k1 = 1.2, b = 0.75, a repeated query term counted once, ties by
 * ascending document number). It keeps postings as growing arrays per term and nothing else: no storage, no
 * transactions, no deletes. What Silk's LMDB-backed index costs is measured against it, and its nDCG@10 checks that
 * the two rank alike.
 */

const K1 = 1.2;
const B = 0.75;

interface Postings {
  readonly documents: number[];
  readonly frequencies: number[];
}

export class MemoryBm25 {
  private readonly postings = new Map<string, Postings>();
  private readonly lengths: number[] = [];
  private totalLength = 0;

  /** Adds a document of these terms; returns its number (0, 1, 2, ...). */
  add(terms: readonly string[]): number {
    const document = this.lengths.length;
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    for (const [term, count] of counts) {
      let list = this.postings.get(term);
      if (list === undefined) {
        list = { documents: [], frequencies: [] };
        this.postings.set(term, list);
      }
      list.documents.push(document);
      list.frequencies.push(count);
    }
    this.lengths.push(terms.length);
    this.totalLength += terms.length;
    return document;
  }

  /** The k best document numbers for these query terms, best first. */
  search(terms: readonly string[], k: number): { document: number; score: number }[] {
    const documents = this.lengths.length;
    if (documents === 0) return [];
    const averageLength = this.totalLength / documents;
    const scores = new Map<number, number>();
    for (const term of [...new Set(terms)].sort()) {
      const list = this.postings.get(term);
      if (list === undefined) continue;
      const idf = Math.log(1 + (documents - list.documents.length + 0.5) / (list.documents.length + 0.5));
      for (let at = 0; at < list.documents.length; at += 1) {
        const document = list.documents[at];
        const tf = list.frequencies[at];
        const norm = tf + K1 * (1 - B + (B * this.lengths[document]) / averageLength);
        scores.set(document, (scores.get(document) ?? 0) + (idf * tf * (K1 + 1)) / norm);
      }
    }
    const hits = [...scores].map(([document, score]) => ({ document, score }));
    hits.sort((left, right) => right.score - left.score || left.document - right.document);
    return hits.slice(0, k);
  }
}
