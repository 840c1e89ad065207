/**
 * A streaming CSV record parser (RFC 4180 with the usual leniencies) for `silk import`. It is fed one physical
 * line at a time, because the importer reads files with readline so that memory stays flat, and a quoted field
 * may hold line breaks: the parser then keeps its state and asks for the next line before it returns a record.
 *
 * Rules: fields are separated by commas; a field that starts with `"` is quoted, `""` inside it is one quote, and
 * it may span lines (the break is kept as `\n`); after the closing quote only a comma or the end of the record may
 * follow. A `"` inside an unquoted field is an ordinary character.
 */
import { SilkError } from "../../protocol/errors.js";

/** Cells of one record longer than this are refused, so a missing closing quote cannot swallow a whole file. */
export const CSV_FIELD_CHARS_MAX = 16 * 1024 * 1024;

const COMMA = 0x2c;
const QUOTE = 0x22;

export class CsvRecordParser {
  private fields: string[] = [];
  private field = "";
  private inQuotes = false;
  /** True while the current field was quoted and its closing quote has been seen. */
  private afterQuote = false;

  /** True when the last line ended inside a quoted field, so the record continues on the next line. */
  get pending(): boolean {
    return this.inQuotes;
  }

  /**
   * Consumes one physical line (without its line break). Returns the record's fields when the line completes a
   * record, or undefined when a quoted field continues on the next line. Throws import_bad_row on a character
   * after a closing quote; the parser is then reset.
   */
  pushLine(line: string): string[] | undefined {
    if (this.inQuotes) this.field += "\n";
    let i = 0;
    while (i < line.length) {
      if (this.inQuotes) {
        i = this.consumeQuoted(line, i);
        continue;
      }
      const c = line.charCodeAt(i);
      if (c === COMMA) {
        this.endField();
        i += 1;
      } else if (this.afterQuote) {
        this.reset();
        throw new SilkError("import_bad_row", `unexpected ${JSON.stringify(line[i])} after a closing quote (column ${i + 1}); quote the whole field and double the quotes inside it`);
      } else if (c === QUOTE && this.field === "") {
        this.inQuotes = true;
        i += 1;
      } else {
        // Copy the run up to the next comma in one slice rather than character by character.
        const comma = line.indexOf(",", i);
        const end = comma < 0 ? line.length : comma;
        this.field += line.slice(i, end);
        i = end;
      }
    }
    if (this.field.length > CSV_FIELD_CHARS_MAX) {
      this.reset();
      throw new SilkError("import_bad_row", `a field is longer than ${CSV_FIELD_CHARS_MAX} characters; is a closing quote missing?`);
    }
    if (this.inQuotes) return undefined;
    this.endField();
    const record = this.fields;
    this.fields = [];
    return record;
  }

  /** Inside a quoted field from `i`: copies text up to the next quote; `""` is a literal quote, a lone one closes. */
  private consumeQuoted(line: string, i: number): number {
    const quote = line.indexOf('"', i);
    if (quote < 0) {
      this.field += line.slice(i);
      return line.length;
    }
    this.field += line.slice(i, quote);
    if (line.charCodeAt(quote + 1) === QUOTE) {
      this.field += '"';
      return quote + 2;
    }
    this.inQuotes = false;
    this.afterQuote = true;
    return quote + 1;
  }

  private endField(): void {
    this.fields.push(this.field);
    this.field = "";
    this.afterQuote = false;
  }

  private reset(): void {
    this.fields = [];
    this.field = "";
    this.inQuotes = false;
    this.afterQuote = false;
  }
}
