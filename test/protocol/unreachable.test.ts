/** unreachable(x): the default of a switch over a closed union throws `internal`, naming what arrived. */
import { describe, expect, it } from "vitest";
import { SilkError, unreachable } from "../../protocol/errors.js";

function thrown(run: () => unknown): SilkError {
  try {
    run();
  } catch (error) {
    if (error instanceof SilkError) return error;
    throw error;
  }
  throw new Error("expected a throw");
}

describe("unreachable", () => {
  it("throws internal with the value as JSON and what it is", () => {
    const error = thrown(() => unreachable({ kind: "newer" } as never, "field type"));
    expect(error.code).toBe("internal");
    expect(error.message).toBe('internal error (a bug in Silk): unexpected field type {"kind":"newer"}');
  });

  it("names a value JSON cannot write (a bigint, undefined) by String()", () => {
    expect(thrown(() => unreachable(7n as never)).message).toBe("internal error (a bug in Silk): unexpected value 7");
    expect(thrown(() => unreachable(undefined as never)).message).toBe("internal error (a bug in Silk): unexpected value undefined");
  });
});
