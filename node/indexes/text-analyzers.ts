/**
 * The analyzers of text indexes (text-index.ts): a preset turns a string into its terms, in order; a term's
 * position is its index in the returned array. The same analyzer runs over stored text and over query text.
 *
 * - `whitespace_lowercase`: splits on Unicode whitespace (JavaScript's `\s` with the `u` flag: White_Space plus
 *   U+FEFF), lowercases each piece with `toLowerCase()`, nothing else: punctuation stays part of the terms.
 * - `standard`: NFKC-normalises, lowercases, turns U+2019 (right single quotation mark) into an apostrophe, then takes
 *   words: runs of letters, digits and marks (`\p{L}\p{N}\p{M}`). An apostrophe or a period joins two runs when a
 *   letter stands on both sides ("don't", "o'neil", "e.g"); a period, comma or apostrophe joins two runs when a digit
 *   stands on both sides ("1.5", "10,000"). Every other character separates words. A Han or Hiragana character is a
 *   word by itself (those scripts are written without spaces), like Lucene's StandardTokenizer. Words longer than
 *   TERM_BYTES_MAX bytes of UTF-8 are dropped (they do not take a position).
 * - `standard_stem_en`: `standard`, then the English possessive "'s" is cut off, the 33 English stop words of
 *   Lucene's EnglishAnalyzer are dropped (they do not take a position), and every remaining word is Porter-stemmed
 *   (the `stemmer` package), like Lucene's EnglishAnalyzer that BEIR's BM25 baseline uses.
 *
 * A regex does the tokenizing: Intl.Segmenter's word segmentation is about 25 times slower (docs/DESIGN.md facts).
 * Stems are memoised (up to STEM_CACHE_ENTRIES_MAX words, then the memo starts over): a corpus repeats its words,
 * and stemming is most of standard_stem_en's cost.
 * Invariant: analyze is a pure function of (analyzer, text); never an empty term.
 */
import { stemmer } from "stemmer";
import type { TextAnalyzer } from "../../protocol/indexes.js";
import { unreachable } from "../../protocol/errors.js";

/** The longest term any index stores, in UTF-8 bytes (Lucene's default maximum token length). */
export const TERM_BYTES_MAX = 255;

/** Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET. */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
  "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
]);

const WHITESPACE = /\s+/u;
/**
 * A word: a run of letters, digits and marks, then any number of further runs each joined by an apostrophe or a
 * period between letters, or by a period, comma or apostrophe between digits.
 */
const WORD = /[\p{L}\p{N}\p{M}]+(?:(?:(?<=\p{L}\p{M}*)['.](?=\p{L})|(?<=\p{N})[.,'](?=\p{N}))[\p{L}\p{N}\p{M}]+)*/gu;
/** Any UTF-16 unit from U+2E80 on, where the CJK blocks (and surrogates of the supplementary ideographs) start. */
const MAYBE_IDEOGRAPHIC = /[\u2e80-\uffff]/;
const IDEOGRAPH = /[\p{sc=Han}\p{sc=Hiragana}]/u;
/** Ideographs one by one, and the other runs between them. */
const IDEOGRAPH_SPLIT = /[\p{sc=Han}\p{sc=Hiragana}]|[^\p{sc=Han}\p{sc=Hiragana}]+/gu;
const POSSESSIVE = /'s$/;
/** The most words the stem memo holds before it is cleared. */
export const STEM_CACHE_ENTRIES_MAX = 65_536;
const stems = new Map<string, string>();

export function analyze(analyzer: TextAnalyzer, text: string): string[] {
  switch (analyzer) {
    case "whitespace_lowercase":
      return whitespaceLowercase(text);
    case "standard":
      return standardWords(text);
    case "standard_stem_en":
      return stemEnglish(standardWords(text));
    default:
      return unreachable(analyzer, "text analyzer");
  }
}

/** The terms of several texts (a StringArray's elements), positions continuing from one element to the next. */
export function analyzeAll(analyzer: TextAnalyzer, texts: readonly string[]): string[] {
  if (texts.length === 1) return analyze(analyzer, texts[0]);
  const terms: string[] = [];
  for (const text of texts) for (const term of analyze(analyzer, text)) terms.push(term);
  return terms;
}

function whitespaceLowercase(text: string): string[] {
  const terms: string[] = [];
  for (const piece of text.split(WHITESPACE)) if (piece !== "") terms.push(piece.toLowerCase());
  return terms;
}

function standardWords(text: string): string[] {
  const normalised = text.normalize("NFKC").toLowerCase().replaceAll("\u2019", "'");
  const terms: string[] = [];
  for (const match of normalised.matchAll(WORD)) {
    const word = match[0];
    if (MAYBE_IDEOGRAPHIC.test(word) && IDEOGRAPH.test(word)) {
      for (const part of word.matchAll(IDEOGRAPH_SPLIT)) pushBounded(terms, trimApostrophes(part[0]));
    } else pushBounded(terms, word);
  }
  return terms;
}

/** A split next to an ideograph can leave a joining apostrophe or period at a run's edge. */
function trimApostrophes(word: string): string {
  return word.replace(/^[.,']+|[.,']+$/g, "");
}

function pushBounded(terms: string[], word: string): void {
  if (word === "") return;
  // A UTF-16 unit is at most 3 bytes of UTF-8, so only long words need counting.
  if (word.length * 3 > TERM_BYTES_MAX && Buffer.byteLength(word, "utf8") > TERM_BYTES_MAX) return;
  terms.push(word);
}

function stemEnglish(words: readonly string[]): string[] {
  const terms: string[] = [];
  for (const word of words) {
    const bare = word.endsWith("'s") ? word.replace(POSSESSIVE, "") : word;
    if (bare === "" || ENGLISH_STOP_WORDS.has(bare)) continue;
    let stem = stems.get(bare);
    if (stem === undefined) {
      if (stems.size >= STEM_CACHE_ENTRIES_MAX) stems.clear();
      stem = stemmer(bare);
      stems.set(bare, stem);
    }
    terms.push(stem);
  }
  return terms;
}
