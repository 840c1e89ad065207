/** The parts of `silk import` that are plain functions: the CSV record parser, cell typing, and the progress line. */
import { describe, expect, it } from "vitest";
import { CsvRecordParser } from "../../bin/import/csv.js";
import { ImportProgress } from "../../bin/import/progress.js";
import { csvFileLabel } from "../../bin/import/readers.js";
import { cellValue, parseJsonRow } from "../../bin/import/rows.js";
import { SilkError } from "../../protocol/errors.js";
import type { FieldDecl, FieldType } from "../../protocol/schema.js";

function records(lines: string[]): (string[] | undefined)[] {
  const parser = new CsvRecordParser();
  return lines.map((line) => parser.pushLine(line));
}

describe("CsvRecordParser", () => {
  it("splits plain, quoted and empty fields", () => {
    expect(records(['a,"b,c",,"d""e"', ",", '""'])).toEqual([["a", "b,c", "", 'd"e'], ["", ""], [""]]);
  });

  it("keeps a quoted field's line breaks and asks for more lines until the quote closes", () => {
    const parser = new CsvRecordParser();
    expect(parser.pushLine('1,"first')).toBeUndefined();
    expect(parser.pending).toBe(true);
    expect(parser.pushLine("")).toBeUndefined();
    expect(parser.pushLine('last",2')).toEqual(["1", "first\n\nlast", "2"]);
    expect(parser.pending).toBe(false);
  });

  it("treats a quote inside an unquoted field as text", () => {
    expect(records(['5" screen,x'])).toEqual([['5" screen', "x"]]);
  });

  it("refuses text after a closing quote, then starts afresh", () => {
    const parser = new CsvRecordParser();
    expect(() => parser.pushLine('"a"b,c')).toThrow(SilkError);
    expect(parser.pushLine("x,y")).toEqual(["x", "y"]);
  });
});

const field = (type: FieldType): FieldDecl => ({ name: "f", type, required: false });
const scalar = (name: Extract<FieldType, { kind: "scalar" }>["name"]): FieldDecl => field({ kind: "scalar", name });

describe("cellValue", () => {
  it("without a schema, numbers and booleans become those and the rest stays text", () => {
    expect(cellValue("42", undefined)).toBe(42);
    expect(cellValue("-1.5e3", undefined)).toBe(-1500);
    expect(cellValue("true", undefined)).toBe(true);
    expect(cellValue("01234", undefined)).toBe("01234");
    expect(cellValue("18446744073709551615", undefined)).toBe(18446744073709551615n);
    expect(cellValue("[1]", undefined)).toBe("[1]");
  });

  it("with a declared field, the schema's type decides", () => {
    expect(cellValue("42", scalar("String"))).toBe("42");
    expect(cellValue("42", scalar("I64"))).toBe("42");
    expect(cellValue("2.5", scalar("F64"))).toBe(2.5);
    expect(cellValue("false", scalar("Boolean"))).toBe(false);
    expect(cellValue("yes", scalar("Boolean"))).toBe("yes");
    expect(cellValue('["a"]', field({ kind: "array", element: { kind: "scalar", name: "String" } }))).toEqual(["a"]);
    expect(cellValue("[oops", field({ kind: "array", element: { kind: "scalar", name: "String" } }))).toBe("[oops");
  });
});

describe("parseJsonRow", () => {
  it("reads node and edge rows; numeric keys compare as their string form", () => {
    expect(parseJsonRow('{"kind":"node","label":"User","key":7}')).toEqual({ kind: "node", label: "User", key: "7", keyValue: 7, props: {} });
    expect(parseJsonRow('{"kind":"edge","label":"F","from":7,"to":{"id":"12"},"props":{"w":1}}')).toEqual({
      kind: "edge", label: "F", from: { key: "7" }, to: { id: 12n }, props: { w: 1 },
    });
  });

  it.each([
    ["[1]", "a row must be a JSON object"],
    ['{"kind":"node","label":"U","key":"a","prop":{}}', 'unknown field "prop"'],
    ['{"kind":"node","label":"","key":"a"}', '"label"'],
    ['{"kind":"node","label":"U","key":""}', '"key" must be'],
    ['{"kind":"edge","label":"F","from":"a"}', 'needs "to"'],
    ['{"kind":"node","label":"U","key":"a","props":[]}', '"props" must be an object'],
  ])("refuses %s", (text, message) => {
    expect(() => parseJsonRow(text)).toThrow(message);
  });
});

describe("csvFileLabel", () => {
  it("is --label when given, else the file name up to its first dot", () => {
    expect(csvFileLabel("/x/User.part1.csv", undefined)).toBe("User");
    expect(csvFileLabel("/x/users.csv", "Person")).toBe("Person");
  });
});

describe("ImportProgress", () => {
  function progress(isTTY: boolean): { shown: string[]; progress: ImportProgress; clock: { ms: number } } {
    const shown: string[] = [];
    const clock = { ms: 1_000 };
    const display = new ImportProgress({ output: { isTTY, write: (text: string) => shown.push(text) }, now: () => clock.ms, totalBytes: 4096 });
    return { shown, progress: display, clock };
  }

  it("shows records, bytes of the total and the rate", () => {
    const { progress: display, clock } = progress(false);
    display.track({ bytesRead: 2048 });
    display.records = 5_000;
    clock.ms += 2_000;
    expect(display.line()).toBe("silk import: 5,000 records, 2.0 KiB of 4.0 KiB (50%), 2,500 records/s");
  });

  it("redraws in place on a terminal and writes whole lines otherwise", () => {
    const tty = progress(true);
    tty.progress.draw();
    tty.progress.stop();
    expect(tty.shown[0].startsWith("\r\x1b[2K")).toBe(true);
    expect(tty.shown.at(-1)).toBe("\r\x1b[2K");
    const plain = progress(false);
    plain.progress.draw();
    plain.progress.stop();
    expect(plain.shown).toHaveLength(1);
    expect(plain.shown[0].endsWith("\n")).toBe(true);
  });
});
