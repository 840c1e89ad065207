/**
 * The one table of warning codes. A warning is a HelixQL construct that HelixDB v2.3.5 accepts and Silk would
 * refuse if it were strict: the project still loads (DESIGN.md: "stricter checks are warnings"), and the warning
 * says what Silk does instead. Like an error, each warning has a stable snake_case code and a place
 * (file:line:column); `silk check` prints it, a server logs it when it starts, `db.warnings` lists it, and
 * `silk check --strict` turns it into an error. docs/ERRORS.md lists these codes beside the error codes.
 */

interface WarningSpec {
  /** What the warning means, what Silk does at run time, and how to make it go away. */
  readonly doc: string;
}

export const WARNING_CODES = {
  implied_text_index: {
    doc: "`SearchBM25<T>` names a type with no `TEXT INDEX` field (HelixDB indexes every node for BM25). Silk searches an implied `standard` text index over T's top-level `String` and `[String]` fields, built in the background like any index (`db.indexes()` shows it with `implied: true`). Declare `TEXT INDEX` on the fields to search to choose them and silence this.",
  },
  math_argument_type: {
    doc: "A math function (`ADD`, `SQRT`, ...) is given an argument that is not a number where the checker can tell (a `String` field, a literal string, a record). HelixDB does not check; Silk loads the query, and a call that reaches such a value answers `invalid_type` (400) with nothing written. Pass a number.",
  },
} as const satisfies Record<string, WarningSpec>;

export type WarningCode = keyof typeof WARNING_CODES;
