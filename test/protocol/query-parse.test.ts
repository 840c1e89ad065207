/**
 * The QUERY part of the HelixQL grammar: every construct parses into the tree ast.ts promises the query checker.
 * Most tests compare trees without `loc` (built with the small constructors below); a few check `loc` itself.
 */
import { describe, expect, it } from "vitest";
import type { CallAst, DeclarationAst, ExprAst, ProjectionItemAst, QueryDeclAst, SourceLocation, StatementAst, StepAst } from "../../protocol/helixql/ast.js";
import { parse, SyntaxError as ParserSyntaxError } from "../../protocol/helixql/generated/parser.js";

/** The tree without its `loc` and `returnLoc` fields, so expected trees stay readable. */
function stripLoc(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripLoc);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "loc" && key !== "returnLoc")
      .map(([key, inner]) => [key, stripLoc(inner)]),
  );
}

function queries(text: string): QueryDeclAst[] {
  return parse(text).declarations.filter((d): d is QueryDeclAst => d.kind === "query");
}

function onlyQuery(text: string): QueryDeclAst {
  const found = queries(text);
  expect(found).toHaveLength(1);
  return found[0];
}

/** The loc-free tree of the single expression in `QUERY Q() => RETURN <text>`. */
function expr(text: string): unknown {
  const query = onlyQuery(`QUERY Q() =>\n  RETURN ${text}\n`);
  expect(query.returns).toHaveLength(1);
  return stripLoc(query.returns[0]);
}

/** The loc-free statements of `QUERY Q() => <text>`. */
function body(text: string): unknown {
  return stripLoc(onlyQuery(`QUERY Q() =>\n${text}\n`).body);
}

// Constructors of loc-free trees. Their types drop `loc` so that the expectations are checked against ast.ts.
type NoLoc<T> = T extends readonly (infer E)[] ? NoLoc<E>[] : T extends object ? { [K in keyof T as K extends "loc" ? never : K]: NoLoc<T[K]> } : T;

const name = (text: string) => ({ text });

function call(text: string, options: { generic?: string; args?: NoLoc<ExprAst>[] } = {}): NoLoc<CallAst> {
  return {
    name: name(text),
    ...(options.generic === undefined ? {} : { generic: name(options.generic) }),
    ...(options.args === undefined ? {} : { args: options.args }),
  };
}

const chain = (start: NoLoc<CallAst>, ...steps: NoLoc<StepAst>[]): NoLoc<ExprAst> => ({ kind: "chain", start, steps });
/** A variable, parameter or `_`: a chain of one call without generic or arguments. */
const ref = (text: string): NoLoc<ExprAst> => chain(call(text));
const step = (text: string, options: { generic?: string; args?: NoLoc<ExprAst>[] } = {}): NoLoc<StepAst> => ({ kind: "call", call: call(text, options) });
const projection = (...items: NoLoc<ProjectionItemAst>[]): NoLoc<StepAst> => ({ kind: "projection", items, exclude: false });
const field = (text: string): NoLoc<ProjectionItemAst> => ({ kind: "field", name: name(text) });
const assign = (key: string, value: NoLoc<ExprAst>): NoLoc<ProjectionItemAst> => ({ kind: "assign", key: name(key), value });
const spread: NoLoc<ProjectionItemAst> = { kind: "spread" };
const object = (...items: NoLoc<ProjectionItemAst>[]): NoLoc<ExprAst> => ({ kind: "object", items });
const number = (text: string): NoLoc<ExprAst> => ({ kind: "literal", literal: { kind: "number", text } });
const string = (value: string): NoLoc<ExprAst> => ({ kind: "literal", literal: { kind: "string", value } });
const boolean = (value: boolean): NoLoc<ExprAst> => ({ kind: "literal", literal: { kind: "boolean", value } });
const assignStatement = (variable: string, value: NoLoc<ExprAst>): NoLoc<StatementAst> => ({ kind: "assign", name: name(variable), value });

function syntaxError(text: string): { line: number; column: number; message: string } {
  try {
    parse(text);
  } catch (error) {
    if (!(error instanceof ParserSyntaxError)) throw error;
    return { line: error.location.start.line, column: error.location.start.column, message: error.message };
  }
  throw new Error(`expected a syntax error in ${JSON.stringify(text)}`);
}

describe("QUERY headers", () => {
  it("parses name, parameters with optional marks and schema types, body and RETURN", () => {
    const query = onlyQuery(`QUERY Create(name: String, tags: [String], rows: [{name: String, age: U8}], maybe?: I64) =>
      u <- N<User>(name)
      RETURN u`);
    expect(stripLoc(query)).toEqual({
      kind: "query",
      name: name("Create"),
      params: [
        { name: name("name"), optional: false, type: { kind: "named", name: "String" } },
        { name: name("tags"), optional: false, type: { kind: "array", element: { kind: "named", name: "String" } } },
        {
          name: name("rows"),
          optional: false,
          type: {
            kind: "array",
            element: {
              kind: "object",
              fields: [
                { name: name("name"), modifiers: [], type: { kind: "named", name: "String" } },
                { name: name("age"), modifiers: [], type: { kind: "named", name: "U8" } },
              ],
            },
          },
        },
        { name: name("maybe"), optional: true, type: { kind: "named", name: "I64" } },
      ],
      body: [assignStatement("u", chain(call("N", { generic: "User", args: [ref("name")] })))],
      returns: [ref("u")],
    });
  });

  it("accepts empty parameters, a trailing comma and a space before `?`", () => {
    expect(onlyQuery("QUERY A() => RETURN 1").params).toEqual([]);
    expect(stripLoc(onlyQuery("QUERY A(a: ID, b ?: U8,) => RETURN a").params)).toEqual([
      { name: name("a"), optional: false, type: { kind: "named", name: "ID" } },
      { name: name("b"), optional: true, type: { kind: "named", name: "U8" } },
    ]);
  });

  it("makes RETURN optional: no returns and no returnLoc", () => {
    const query = onlyQuery("QUERY Wipe(id: ID) =>\n  DROP N<User>(id)\n");
    expect(query.returns).toEqual([]);
    expect(query).not.toHaveProperty("returnLoc");
    expect(query.body).toHaveLength(1);
  });

  it("allows a query with RETURN only, and a query with nothing at all", () => {
    expect(stripLoc(onlyQuery("QUERY Hello() => RETURN \"hi\""))).toMatchObject({ body: [], returns: [string("hi")] });
    expect(stripLoc(onlyQuery("QUERY Nothing() =>"))).toMatchObject({ body: [], returns: [] });
  });

  it("parses several RETURN items of every kind", () => {
    const query = onlyQuery(`QUERY Q() => RETURN u, e, "Success", {users: users, count: c}, [1, 2], PI(), !x, true`);
    expect(stripLoc(query.returns)).toEqual([
      ref("u"),
      ref("e"),
      string("Success"),
      object(assign("users", ref("users")), assign("count", ref("c"))),
      { kind: "array", elements: [number("1"), number("2")] },
      chain(call("PI", { args: [] })),
      { kind: "not", operand: ref("x") },
      boolean(true),
    ]);
  });
});

describe("statements", () => {
  it("parses assignment, bare expressions and DROP", () => {
    expect(body(`  e <- AddE<Follows>({since: "2024-01-01"})::From(u)::To(other)
  AddE<Follows>::From(a)::To(b)
  DROP N<User>(id)::OutE<Follows>`)).toEqual([
      assignStatement(
        "e",
        chain(call("AddE", { generic: "Follows", args: [object(assign("since", string("2024-01-01")))] }), step("From", { args: [ref("u")] }), step("To", { args: [ref("other")] })),
      ),
      { kind: "expr", value: chain(call("AddE", { generic: "Follows" }), step("From", { args: [ref("a")] }), step("To", { args: [ref("b")] })) },
      { kind: "drop", target: chain(call("N", { generic: "User", args: [ref("id")] }), step("OutE", { generic: "Follows" })) },
    ]);
  });

  it("parses AddN and AddV property blocks with literals of every kind", () => {
    expect(body(`  u <- AddN<User>({name: name, age: age, active: true, off: false, score: -1.5, big: 1e3})
  v <- AddV<Doc>(vec, {title: t})
  v2 <- AddV<Doc>(Embed(text))`)).toEqual([
      assignStatement(
        "u",
        chain(
          call("AddN", {
            generic: "User",
            args: [
              object(
                assign("name", ref("name")),
                assign("age", ref("age")),
                assign("active", boolean(true)),
                assign("off", boolean(false)),
                assign("score", number("-1.5")),
                assign("big", number("1e3")),
              ),
            ],
          }),
        ),
      ),
      assignStatement("v", chain(call("AddV", { generic: "Doc", args: [ref("vec"), object(assign("title", ref("t")))] }))),
      assignStatement("v2", chain(call("AddV", { generic: "Doc", args: [chain(call("Embed", { args: [ref("text")] }))] }))),
    ]);
  });

  it("parses FOR over a name, a destructuring and a dotted property", () => {
    expect(body(`  FOR {name, age} IN rows {
      AddN<User>({name: name, age: age})
  }
  FOR x IN tags { AddN<Tag>({name: x}) }
  FOR row IN rows { AddN<User>({name: row.name}) }`)).toEqual([
      {
        kind: "for",
        binding: { kind: "destructure", names: [name("name"), name("age")] },
        source: ref("rows"),
        body: [{ kind: "expr", value: chain(call("AddN", { generic: "User", args: [object(assign("name", ref("name")), assign("age", ref("age")))] })) }],
      },
      {
        kind: "for",
        binding: { kind: "name", name: name("x") },
        source: ref("tags"),
        body: [{ kind: "expr", value: chain(call("AddN", { generic: "Tag", args: [object(assign("name", ref("x")))] })) }],
      },
      {
        kind: "for",
        binding: { kind: "name", name: name("row") },
        source: ref("rows"),
        body: [{ kind: "expr", value: chain(call("AddN", { generic: "User", args: [object(assign("name", ref("row.name")))] })) }],
      },
    ]);
  });

  it("nests FOR loops, allows an empty FOR body and a FOR source with steps", () => {
    expect(body("FOR a IN xs::{items} { FOR b IN a { x <- b } }\nFOR c IN ys {}")).toEqual([
      {
        kind: "for",
        binding: { kind: "name", name: name("a") },
        source: chain(call("xs"), projection(field("items"))),
        body: [{ kind: "for", binding: { kind: "name", name: name("b") }, source: ref("a"), body: [assignStatement("x", ref("b"))] }],
      },
      { kind: "for", binding: { kind: "name", name: name("c") }, source: ref("ys"), body: [] },
    ]);
  });

  it("ends a chain at a line break that is not followed by `::`", () => {
    expect(body("  x <- N<User>\n  y <- E<Follows>\n  N<User>\n  z <- x")).toEqual([
      assignStatement("x", chain(call("N", { generic: "User" }))),
      assignStatement("y", chain(call("E", { generic: "Follows" }))),
      { kind: "expr", value: chain(call("N", { generic: "User" })) },
      assignStatement("z", ref("x")),
    ]);
  });

  it("continues a chain across lines and comments around `::`", () => {
    expect(body("  users <- N<User> // all of them\n    :: WHERE(_::{age}::GT(18)) // adults\n    ::\n    RANGE(0, 10)")).toEqual([
      assignStatement(
        "users",
        chain(
          call("N", { generic: "User" }),
          step("WHERE", { args: [chain(call("_"), projection(field("age")), step("GT", { args: [number("18")] }))] }),
          step("RANGE", { args: [number("0"), number("10")] }),
        ),
      ),
    ]);
  });

  it("allows whitespace and comments between every token", () => {
    const spaced = `QUERY // name next
  Q ( // params
    a // first
    ? : // type next
    ID ,
  ) // arrow
  => // body
  x // target
  <- // value
  N < User > ( a ) :: { name , .. } // end
  FOR { p , q } IN rows { DROP p }
  RETURN // items
  x , // more
  [ 1 , ] , { k : x , }`;
    const compact = `QUERY Q(a?: ID) => x <- N<User>(a)::{name, ..} FOR {p, q} IN rows { DROP p } RETURN x, [1], {k: x}`;
    expect(stripLoc(onlyQuery(spaced))).toEqual(stripLoc(onlyQuery(compact)));
  });
});

describe("expressions and steps", () => {
  it("parses the uniform call: name, generic, arguments, each optional", () => {
    expect(expr("COUNT")).toEqual(ref("COUNT"));
    expect(expr("N<User>")).toEqual(chain(call("N", { generic: "User" })));
    expect(expr("PI()")).toEqual(chain(call("PI", { args: [] })));
    expect(expr("N<User>(id)")).toEqual(chain(call("N", { generic: "User", args: [ref("id")] })));
    expect(expr("_")).toEqual(ref("_"));
    expect(expr("NOW")).toEqual(ref("NOW"));
    expect(expr("RANGE(0, 10,)")).toEqual(chain(call("RANGE", { args: [number("0"), number("10")] })));
  });

  it("parses WHERE with nested AND, OR, comparisons and a negated EXISTS", () => {
    expect(expr(`N<User>::WHERE(AND(_::{age}::GT(18), OR(_::{name}::EQ("a"), !EXISTS(_::In<Follows>))))::RANGE(0, 10)`)).toEqual(
      chain(
        call("N", { generic: "User" }),
        step("WHERE", {
          args: [
            chain(
              call("AND", {
                args: [
                  chain(call("_"), projection(field("age")), step("GT", { args: [number("18")] })),
                  chain(
                    call("OR", {
                      args: [
                        chain(call("_"), projection(field("name")), step("EQ", { args: [string("a")] })),
                        { kind: "not", operand: chain(call("EXISTS", { args: [chain(call("_"), step("In", { generic: "Follows" }))] })) },
                      ],
                    }),
                  ),
                ],
              }),
            ),
          ],
        }),
        step("RANGE", { args: [number("0"), number("10")] }),
      ),
    );
  });

  it("parses projections with fields, computed items, nested projections and a spread", () => {
    expect(expr("users::{name, followers: _::In<Follows>::COUNT, posts: _::Out<Wrote>::{title}, ..}")).toEqual(
      chain(
        call("users"),
        projection(
          field("name"),
          assign("followers", chain(call("_"), step("In", { generic: "Follows" }), step("COUNT"))),
          assign("posts", chain(call("_"), step("Out", { generic: "Wrote" }), projection(field("title")))),
          spread,
        ),
      ),
    );
    expect(expr("users::{}")).toEqual(chain(call("users"), projection()));
  });

  it("parses an exclusion as a projection of fields with exclude set", () => {
    expect(expr("users::!{age, name,}")).toEqual(chain(call("users"), { kind: "projection", items: [field("age"), field("name")], exclude: true }));
    expect(expr("users:: ! { age }")).toEqual(chain(call("users"), { kind: "projection", items: [field("age")], exclude: true }));
  });

  it("parses a closure step", () => {
    expect(expr("users::|u| { name: u::{name}, n: u::Out<Follows>::COUNT, .. }")).toEqual(
      chain(call("users"), {
        kind: "closure",
        param: name("u"),
        items: [assign("name", chain(call("u"), projection(field("name")))), assign("n", chain(call("u"), step("Out", { generic: "Follows" }), step("COUNT"))), spread],
      }),
    );
  });

  it("parses ORDER with a generic and arguments, ID lookups by index, vector search and paths", () => {
    expect(expr("N<User>::ORDER<Desc>(_::{age})::FIRST")).toEqual(
      chain(call("N", { generic: "User" }), step("ORDER", { generic: "Desc", args: [chain(call("_"), projection(field("age")))] }), step("FIRST")),
    );
    expect(expr(`N<User>({handle: "x"})::ID`)).toEqual(chain(call("N", { generic: "User", args: [object(assign("handle", string("x")))] }), step("ID")));
    expect(expr("SearchV<Doc>(vec, 10)")).toEqual(chain(call("SearchV", { generic: "Doc", args: [ref("vec"), number("10")] })));
    expect(expr("N<City>(a)::ShortestPathDijkstras<Road>(_::{distance})::To(b)")).toEqual(
      chain(
        call("N", { generic: "City", args: [ref("a")] }),
        step("ShortestPathDijkstras", { generic: "Road", args: [chain(call("_"), projection(field("distance")))] }),
        step("To", { args: [ref("b")] }),
      ),
    );
  });

  it("parses math functions as calls", () => {
    expect(expr("ADD(POW(2, 3), SQRT(x))")).toEqual(
      chain(call("ADD", { args: [chain(call("POW", { args: [number("2"), number("3")] })), chain(call("SQRT", { args: [ref("x")] }))] })),
    );
  });

  it("parses arrays and objects of expressions, empty and with trailing commas", () => {
    expect(expr("[]")).toEqual({ kind: "array", elements: [] });
    expect(expr("{}")).toEqual(object());
    expect(expr("[x::{a}, [1], {b},]")).toEqual({ kind: "array", elements: [chain(call("x"), projection(field("a"))), { kind: "array", elements: [number("1")] }, object(field("b"))] });
    expect(expr(`{a: "s\\n\\"q\\"", b, ..,}`)).toEqual(object(assign("a", string('s\n"q"')), field("b"), spread));
  });

  it("keeps a dotted name whole, and only without generic or arguments", () => {
    expect(expr("row.name")).toEqual(ref("row.name"));
    expect(expr("a.b.c_1::{x}")).toEqual(chain(call("a.b.c_1"), projection(field("x"))));
    expect(syntaxError("QUERY Q() => RETURN row.name(1)")).toMatchObject({ line: 1, column: 29 });
  });

  it("parses nested negation", () => {
    expect(expr("!!x")).toEqual({ kind: "not", operand: { kind: "not", operand: ref("x") } });
  });
});

describe("keywords", () => {
  it("accepts names that start with a keyword", () => {
    expect(body("in_stock <- N<Item>::{in_stock}\nFORMAT <- DROPPED\nRETURNS <- QUERYING::INFO")).toEqual([
      assignStatement("in_stock", chain(call("N", { generic: "Item" }), projection(field("in_stock")))),
      assignStatement("FORMAT", ref("DROPPED")),
      assignStatement("RETURNS", chain(call("QUERYING"), step("INFO"))),
    ]);
  });

  it("accepts keywords as item names inside braces, where they cannot be mistaken", () => {
    expect(expr("x::{FOR, IN: y, RETURN}")).toEqual(chain(call("x"), projection(field("FOR"), assign("IN", ref("y")), field("RETURN"))));
    expect(expr("{DROP: 1}")).toEqual(object(assign("DROP", number("1"))));
  });

  it("refuses keywords as variables, parameters and expression starts", () => {
    expect(syntaxError("QUERY Q() =>\n  IN <- x")).toMatchObject({ line: 2, column: 3 });
    expect(syntaxError("QUERY Q(RETURN: ID) => RETURN 1")).toMatchObject({ line: 1, column: 9 });
    expect(syntaxError("QUERY Q() => x <- DROP")).toMatchObject({ line: 1, column: 19 });
    expect(syntaxError("QUERY Q() => FOR FOR IN x {}")).toMatchObject({ line: 1, column: 18 });
  });
});

describe("files with schema and queries", () => {
  it("keeps declarations in order, including a schema declaration right after a query without RETURN", () => {
    const declarations: readonly DeclarationAst[] = parse(`// users
N::User { name: String }
QUERY Add(name: String) =>
    AddN<User>({name: name})
E::Follows { From: User, To: User }
QUERY Get() =>
    users <- N<User>
    RETURN users
V::Doc { title: String }
QUERY Last() =>
    x <- N<User>
`).declarations;
    expect(declarations.map((d) => `${d.kind} ${"name" in d ? d.name.text : ""}`)).toEqual(["node User", "query Add", "edge Follows", "query Get", "vector Doc", "query Last"]);
    expect((declarations[1] as QueryDeclAst).body).toHaveLength(1);
  });
});

describe("locations", () => {
  const text = `N::User { name: String }

QUERY Get(id: ID, tags: [String]) =>
    user <- N<User>(id)::{name, ..}
    FOR {a, b} IN rows { DROP a }
    RETURN user, !x, [1]
`;
  const query = onlyQuery(text);

  it("places the query, its name, parameters and RETURN", () => {
    expect(query.loc).toEqual({ line: 3, column: 1, offset: 26 });
    expect(query.name.loc).toMatchObject({ line: 3, column: 7 });
    expect(query.params[1].name.loc).toMatchObject({ line: 3, column: 19 });
    expect(query.params[1].type.loc).toMatchObject({ line: 3, column: 25 });
    expect(query.returnLoc).toMatchObject({ line: 6, column: 5 });
  });

  it("places statements, chains, calls, generics, arguments and steps", () => {
    const [assignment, loop] = query.body;
    expect(assignment.loc).toMatchObject({ line: 4, column: 5 });
    if (assignment.kind !== "assign" || assignment.value.kind !== "chain") throw new Error("expected an assignment of a chain");
    expect(assignment.name.loc).toMatchObject({ line: 4, column: 5 });
    const value = assignment.value;
    expect(value.loc).toMatchObject({ line: 4, column: 13 });
    expect(value.start.loc).toMatchObject({ line: 4, column: 13 });
    expect(value.start.generic?.loc).toMatchObject({ line: 4, column: 15 });
    expect(value.start.args?.[0]).toMatchObject({ kind: "chain", loc: { line: 4, column: 21 } });
    const projectionStep = value.steps[0];
    if (projectionStep.kind !== "projection") throw new Error("expected a projection");
    expect(projectionStep.loc).toMatchObject({ line: 4, column: 26 });
    expect(projectionStep.items[1]).toEqual({ kind: "spread", loc: { line: 4, column: 33, offset: expect.any(Number) } });

    if (loop.kind !== "for" || loop.binding.kind !== "destructure") throw new Error("expected a destructuring FOR");
    expect(loop.loc).toMatchObject({ line: 5, column: 5 });
    expect(loop.binding.loc).toMatchObject({ line: 5, column: 9 });
    expect(loop.binding.names[1].loc).toMatchObject({ line: 5, column: 13 });
    expect(loop.body[0].loc).toMatchObject({ line: 5, column: 26 });
  });

  it("places RETURN items", () => {
    expect(query.returns[1].kind === "not" && query.returns[1].loc).toMatchObject({ line: 6, column: 18 });
    expect(query.returns[2].kind === "array" && query.returns[2].loc).toMatchObject({ line: 6, column: 22 });
  });

  it("counts offsets from the start of the file", () => {
    expect(text.slice(query.loc.offset, query.loc.offset + 5)).toBe("QUERY");
    expect(text.slice(query.name.loc.offset).startsWith("Get(")).toBe(true);
  });

  it("gives every loc the line and column its offset has, with only \\n ending a line (so \\r\\n counts \\r)", () => {
    const crlf = `${text}QUERY Next() =>\r\n  x <- [ !{a: 1} ]\r\n\r\n  RETURN x::|u| {b: u}\r\n`;
    const locs: SourceLocation[] = [];
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value !== null && typeof value === "object") {
        for (const [key, inner] of Object.entries(value)) {
          if (key === "loc" || key === "returnLoc") locs.push(inner as SourceLocation);
          else collect(inner);
        }
      }
    };
    collect(parse(crlf));
    expect(locs.length).toBeGreaterThan(40);
    for (const loc of locs) {
      const before = crlf.slice(0, loc.offset);
      expect(loc).toEqual({ line: before.split("\n").length, column: loc.offset - (before.lastIndexOf("\n") + 1) + 1, offset: loc.offset });
    }
  });
});

describe("syntax errors", () => {
  it("points at an unclosed argument list where the next statement begins", () => {
    const error = syntaxError("QUERY Q() =>\n  x <- N<User>(\n  RETURN x");
    expect(error).toMatchObject({ line: 3, column: 3 });
    expect(error.message).toContain('")"');
  });

  it("points at a missing arrow", () => {
    const error = syntaxError("QUERY Q(id: ID)\n  x <- N<User>(id)");
    expect(error).toMatchObject({ line: 2, column: 3 });
    expect(error.message).toContain('"=>"');
  });

  it("points at a missing parameter type", () => {
    expect(syntaxError("QUERY Q(id: ) =>")).toMatchObject({ line: 1, column: 13 });
  });

  it("points at the end of a RETURN with nothing after it, naming what could come", () => {
    const error = syntaxError("QUERY Q() =>\n  RETURN\n");
    expect(error).toMatchObject({ line: 3, column: 1 });
    expect(error.message).toMatch(/identifier/);
  });

  it("points at an unclosed FOR body", () => {
    expect(syntaxError("QUERY Q() =>\n  FOR x IN xs {\n    DROP x\n")).toMatchObject({ line: 4, column: 1 });
  });

  it("refuses a semicolon between statements", () => {
    expect(syntaxError("QUERY Q() =>\n  x <- a;\n  RETURN x")).toMatchObject({ line: 2, column: 9 });
  });

  it("refuses a step after `::` that is none of call, projection or closure", () => {
    expect(syntaxError("QUERY Q() => RETURN x::1")).toMatchObject({ line: 1, column: 24 });
    expect(syntaxError("QUERY Q() => RETURN x::!{a: 1}")).toMatchObject({ line: 1, column: 27 });
  });
});
