/**
 * The text analyzer presets (node/indexes/text-analyzers.ts): whitespace_lowercase, standard and standard_stem_en, on
 * ASCII and Unicode text, with the term-length limit, stop words, possessives and Porter stemming.
 */
import { describe, expect, it } from "vitest";
import { stemmer } from "stemmer";
import { analyze, analyzeAll, ENGLISH_STOP_WORDS, STEM_CACHE_ENTRIES_MAX, TERM_BYTES_MAX } from "../../node/indexes/text-analyzers.js";

describe("whitespace_lowercase", () => {
  it("splits on Unicode whitespace and lowercases, keeping punctuation", () => {
    expect(analyze("whitespace_lowercase", "Hello,\tWORLD!\nfoo\u00a0Bar\u3000Baz\u2003qux")).toEqual(["hello,", "world!", "foo", "bar", "baz", "qux"]);
  });

  it("gives no term for empty or blank text", () => {
    expect(analyze("whitespace_lowercase", "")).toEqual([]);
    expect(analyze("whitespace_lowercase", " \t\n ")).toEqual([]);
  });

  it("lowercases beyond ASCII and does not normalise", () => {
    expect(analyze("whitespace_lowercase", "ÉCOLE ΣΊΣΥΦΟΣ Ｆｕｌｌ")).toEqual(["école", "σίσυφος", "ｆｕｌｌ"]);
  });
});

describe("standard", () => {
  it("takes words of letters and digits, lowercased, punctuation separating", () => {
    expect(analyze("standard", "Hello, World! (foo-bar) x/y_z")).toEqual(["hello", "world", "foo", "bar", "x", "y", "z"]);
  });

  it("keeps apostrophes inside words, typographic ones too, and drops quotes around words", () => {
    expect(analyze("standard", "Don't 'quoted' O\u2019Neil's")).toEqual(["don't", "quoted", "o'neil's"]);
  });

  it("keeps decimal numbers and thousands separators, and abbreviations with periods", () => {
    expect(analyze("standard", "1.5 mg, 10,000 cells; e.g. this. End")).toEqual(["1.5", "mg", "10,000", "cells", "e.g", "this", "end"]);
  });

  it("normalises with NFKC and keeps letters with diacritics and combining marks", () => {
    expect(analyze("standard", "Ｆｕｌｌｗｉｄｔｈ café naïve ﬁne")).toEqual(["fullwidth", "café", "naïve", "fine"]);
    // e + combining acute accent (U+0301) composes to é under NFKC.
    expect(analyze("standard", "Cafe\u0301")).toEqual(["café"]);
  });

  it("makes each Han and Hiragana character a term, Katakana runs one term", () => {
    expect(analyze("standard", "東京のテキスト")).toEqual(["東", "京", "の", "テキスト"]);
  });

  it("handles other scripts' words and digits", () => {
    expect(analyze("standard", "Привет мир ٣٤ γειά")).toEqual(["привет", "мир", "٣٤", "γειά"]);
  });

  it(`drops words longer than ${TERM_BYTES_MAX} bytes of UTF-8, without taking a position`, () => {
    const fits = "é".repeat(TERM_BYTES_MAX >> 1); // 254 bytes
    const tooLong = "é".repeat((TERM_BYTES_MAX >> 1) + 1); // 256 bytes
    expect(analyze("standard", `a ${tooLong} b ${fits}`)).toEqual(["a", "b", fits]);
    expect(analyze("standard", "x".repeat(TERM_BYTES_MAX))).toEqual(["x".repeat(TERM_BYTES_MAX)]);
    expect(analyze("standard", "x".repeat(TERM_BYTES_MAX + 1))).toEqual([]);
  });

  it("gives no term for text without letters or digits", () => {
    expect(analyze("standard", "... --- !!!")).toEqual([]);
  });
});

describe("standard_stem_en", () => {
  it("drops English stop words (they take no position) and stems the rest", () => {
    expect(analyze("standard_stem_en", "The running dogs are chasing the ponies into connections")).toEqual(["run", "dog", "chase", "poni", "connect"]);
  });

  it("cuts off possessives before the stop list and the stemmer", () => {
    expect(analyze("standard_stem_en", "John's studies; it's")).toEqual(["john", "studi"]);
  });

  it("has Lucene's 33 English stop words", () => {
    expect(ENGLISH_STOP_WORDS.size).toBe(33);
    expect(analyze("standard_stem_en", [...ENGLISH_STOP_WORDS].join(" "))).toEqual([]);
  });

  it("leaves non-English words and numbers alone", () => {
    expect(analyze("standard_stem_en", "École 42 東")).toEqual(["école", "42", "東"]);
  });

  it("stems the same through its memo, also after the memo filled up and started over", () => {
    const words = Array.from({ length: STEM_CACHE_ENTRIES_MAX + 1_000 }, (_, at) => `w${at.toString(36)}ing`);
    const expected = words.map((word) => stemmer(word));
    expect(analyze("standard_stem_en", words.join(" "))).toEqual(expected);
    expect(analyze("standard_stem_en", words.slice(0, 2_000).join(" "))).toEqual(expected.slice(0, 2_000));
  });

  it("stems query and document forms alike", () => {
    expect(analyze("standard_stem_en", "generalization")).toEqual(analyze("standard_stem_en", "generalize"));
  });
});

describe("analyzeAll", () => {
  it("continues positions from one text to the next", () => {
    expect(analyzeAll("standard", ["quick fox", "", "lazy dog"])).toEqual(["quick", "fox", "lazy", "dog"]);
    expect(analyzeAll("standard", [])).toEqual([]);
  });
});
