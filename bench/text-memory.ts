/**
 * The text benchmark's baseline (bench/text.ts): the leanest in-memory BM25 over already-analysed documents, with the
 * same formula as node/indexes/text-index.ts (Lucene's idf, k1 = 1.2, b = 0.75, a repeated query term counted once, ties by
 * ascending document number). Postings are typed arrays per term (document numbers in an Int32Array, term
 * frequencies in a Float64Array), `seal()` packs them once the documents are added; a search scores term at a time
 * into one Float64Array accumulator over every document, then keeps the k best in a small heap. No storage, no
 * transactions, no deletes. What Silk's LMDB-backed index costs is measured against it, and its nDCG@10 checks that
 * the two rank alike.
 */

const K1 = 1.2;
const B = 0.75;

/** One term's postings while documents are added (growing arrays), then packed by `seal`. */
interface Postings {
  documents: number[] | Int32Array;
  frequencies: number[] | Float64Array;
}

export class MemoryBm25 {
  private readonly postings = new Map<string, Postings>();
  private readonly lengthList: number[] = [];
  private lengths = new Float64Array(0);
  private totalLength = 0;
  private scores = new Float64Array(0);
  /** The documents the current search touched, so that only they are reset. */
  private touched = new Int32Array(0);

  /** Adds a document of these terms; returns its number (0, 1, 2, ...). */
  add(terms: readonly string[]): number {
    const document = this.lengthList.length;
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    for (const [term, count] of counts) {
      let list = this.postings.get(term);
      if (list === undefined) {
        list = { documents: [], frequencies: [] };
        this.postings.set(term, list);
      }
      (list.documents as number[]).push(document);
      (list.frequencies as number[]).push(count);
    }
    this.lengthList.push(terms.length);
    this.totalLength += terms.length;
    return document;
  }

  /** Packs every term's postings into typed arrays; call once after the last `add`, before searching. */
  seal(): void {
    for (const list of this.postings.values()) {
      list.documents = Int32Array.from(list.documents);
      list.frequencies = Float64Array.from(list.frequencies);
    }
    this.lengths = Float64Array.from(this.lengthList);
    this.scores = new Float64Array(this.lengths.length);
    this.touched = new Int32Array(this.lengths.length);
  }

  /** The k best document numbers for these query terms, best first. */
  search(terms: readonly string[], k: number): { document: number; score: number }[] {
    const documents = this.lengths.length;
    if (documents === 0) return [];
    const averageLength = this.totalLength / documents;
    const scores = this.scores;
    const touched = this.touched;
    const lengths = this.lengths;
    let touchedCount = 0;
    for (const term of [...new Set(terms)].sort()) {
      const list = this.postings.get(term);
      if (list === undefined) continue;
      const ids = list.documents as Int32Array;
      const frequencies = list.frequencies as Float64Array;
      const idf = Math.log(1 + (documents - ids.length + 0.5) / (ids.length + 0.5));
      for (let at = 0; at < ids.length; at += 1) {
        const document = ids[at];
        const tf = frequencies[at];
        const norm = tf + K1 * (1 - B + (B * lengths[document]) / averageLength);
        if (scores[document] === 0) touched[touchedCount++] = document;
        scores[document] += (idf * tf * (K1 + 1)) / norm;
      }
    }
    const top = new Heap(k);
    for (let at = 0; at < touchedCount; at += 1) {
      const document = touched[at];
      top.offer(document, scores[document]);
      scores[document] = 0;
    }
    return top.sorted();
  }
}

/** The k best (document, score) pairs: a binary heap whose root is the worst of them. */
class Heap {
  private readonly documents: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(private readonly k: number) {
    this.documents = new Int32Array(k);
    this.scores = new Float64Array(k);
  }

  /** Whether document a ranks before document b: a higher score, then a lower number. */
  private before(a: number, b: number): boolean {
    return this.scores[a] > this.scores[b] || (this.scores[a] === this.scores[b] && this.documents[a] < this.documents[b]);
  }

  private swap(a: number, b: number): void {
    const document = this.documents[a];
    const score = this.scores[a];
    this.documents[a] = this.documents[b];
    this.scores[a] = this.scores[b];
    this.documents[b] = document;
    this.scores[b] = score;
  }

  offer(document: number, score: number): void {
    if (this.size < this.k) {
      let at = this.size++;
      this.documents[at] = document;
      this.scores[at] = score;
      while (at > 0 && this.before((at - 1) >> 1, at)) {
        this.swap(at, (at - 1) >> 1);
        at = (at - 1) >> 1;
      }
      return;
    }
    if (!(score > this.scores[0] || (score === this.scores[0] && document < this.documents[0]))) return;
    this.documents[0] = document;
    this.scores[0] = score;
    for (let at = 0; ; ) {
      let worst = at;
      for (const child of [2 * at + 1, 2 * at + 2]) if (child < this.size && this.before(worst, child)) worst = child;
      if (worst === at) break;
      this.swap(at, worst);
      at = worst;
    }
  }

  sorted(): { document: number; score: number }[] {
    const hits = Array.from({ length: this.size }, (_, at) => ({ document: this.documents[at], score: this.scores[at] }));
    return hits.sort((left, right) => right.score - left.score || left.document - right.document);
  }
}
