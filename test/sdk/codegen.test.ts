/**
 * `silk codegen`: the module generated for examples/ and for a richer project (every field type, optional
 * parameters, projections, counts, IDs, edges, vectors, FOR loops, literal RETURNs) typechecks with `tsc --strict`
 * together with a caller whose type assertions would fail on a wrong type; its functions then run end to end
 * against a real gateway and answer what their types say. A project that does not check writes nothing and exits 1.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../runtime/embedded.js";
import { SilkClient } from "../../sdk/client.js";
import { generateClientModule, runCodegen } from "../../sdk/codegen.js";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { removeTemporaryDirectories, temporaryDirectory } from "../cli/helpers.js";
import { listeningGateway } from "../helpers/gateway.js";

const root = resolve(import.meta.dirname, "../..");

const RICH_SCHEMA = `N::User { UNIQUE INDEX handle: String, REQUIRED name: String, age: U8 DEFAULT 0, score: F64, big: U64, huge: U128,
          small: I8, joined: Date DEFAULT NOW, active: Boolean, tags: [String], address: { street: String, REQUIRED zip: U32 } }
N::Post { title: String }
E::Follows { From: User, To: User, Properties: { since: Date } }
E::Wrote { From: User, To: Post }
V::Doc { title: String }
E::About { From: Doc, To: Post }
`;

const RICH_QUERIES = `QUERY AddUser(handle: String, name: String, age?: U8, big?: U64, tags: [String], address: { street: String, zip: U32 }, joined: Date) =>
    user <- AddN<User>({handle: handle, name: name, age: age, big: big, tags: tags, address: address, joined: joined})
    RETURN user

QUERY AddPost(title: String, author: ID) =>
    post <- AddN<Post>({title: title})
    AddE<Wrote>::From(author)::To(post)
    RETURN post

QUERY Follow(a: ID, b: ID, since: Date) =>
    link <- AddE<Follows>({since: since})::From(a)::To(b)
    RETURN link

QUERY Profile(id: ID) =>
    user <- N<User>(id)
    followers <- user::In<Follows>
    n <- user::In<Follows>::COUNT
    posts <- user::Out<Wrote>
    rows <- user::Out<Follows>::{handle, name, followers: _::In<Follows>::COUNT}
    ids <- user::Out<Follows>::ID
    links <- user::OutE<Follows>
    RETURN user, followers, n, posts, rows, ids, links

QUERY ByHandle(handle: String) =>
    user <- N<User>({handle: handle})
    RETURN {found: user, kind: "user", pair: [user, 1]}

QUERY Everyone() =>
    users <- N<User>::RANGE(0, 10)
    first <- N<User>::FIRST
    RETURN users, first

QUERY AddDoc(vector: [F64], title: String, post: ID) =>
    doc <- AddV<Doc>(vector, {title: title})
    AddE<About>::From(doc)::To(post)
    RETURN doc

QUERY Authors(post: ID) =>
    authors <- N<Post>(post)::In<Wrote>
    docs <- N<Post>(post)::In<About>
    RETURN authors, docs

QUERY Many(names: [String]) =>
    FOR name IN names {
        made <- AddN<User>({name: name})
    }
    RETURN made

QUERY Hello() =>
    RETURN "hello"
`;

/**
 * A caller of the rich module. `Exact` fails to compile unless the generated type is exactly the one written here,
 * so this file pins the generated types down; it is also what the end-to-end test runs.
 */
const RICH_CALLER = `import { SilkClient } from ${JSON.stringify(pathToFileURL(join(root, "sdk/client.js")).pathname)};
import * as q from "./rich.js";

type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const check = <T extends true>(): T | undefined => undefined;
check<Exact<q.AddUserParams["big"], string | number | undefined>>();
check<Exact<q.AddUserParams["tags"], readonly string[]>>();
check<Exact<q.UserNode["name"], string>>();
check<Exact<q.UserNode["big"], number | string | undefined>>();
check<Exact<q.UserNode["address"], { street?: string; zip: number } | undefined>>();
check<Exact<q.ProfileResult["n"], number>>();
check<Exact<q.ProfileResult["ids"], string[]>>();
check<Exact<q.ProfileResult["links"], q.FollowsEdge[]>>();
check<Exact<q.ProfileResult["rows"], { handle: string | null; name: string | null; followers: number }[]>>();
check<Exact<q.ByHandleResult, { found: q.UserNode | null; kind: "user"; pair: [q.UserNode | null, 1] }>>();
check<Exact<q.AuthorsResult["docs"], q.DocVector[]>>();
check<Exact<q.HelloResult, "hello">>();

export async function scenario(url: string) {
  const client = new SilkClient({ url });
  const ann = (await q.AddUser(client, { handle: "ann", name: "Ann", tags: ["a"], address: { zip: 1234 }, joined: "2024-05-01", big: "18446744073709551615" })).user;
  const bob = (await q.AddUser(client, { handle: "bob", name: "Bob", age: 41, tags: [], address: { street: "Main", zip: 1 }, joined: "2024-06-01T10:00:00Z" })).user;
  if (ann === null || bob === null) throw new Error("AddUser returned null");
  const post = (await q.AddPost(client, { title: "Hi", author: ann.id })).post;
  if (post === null) throw new Error("AddPost returned null");
  const link = (await q.Follow(client, { a: bob.id, b: ann.id, since: "2024-07-01" })).link;
  await q.Follow(client, { a: ann.id, b: bob.id, since: "2024-07-02" });
  const doc = (await q.AddDoc(client, { vector: [0.5, 1.5], title: "about Hi", post: post.id })).doc;
  return {
    ann, bob, post, link, doc,
    profile: await q.Profile(client, { id: ann.id }),
    byHandle: await q.ByHandle(client, { handle: "bob" }),
    everyone: await q.Everyone(client),
    authors: await q.Authors(client, { post: post.id }),
    many: await q.Many(client, { names: ["x", "y"] }),
    hello: await q.Hello(client),
  };
}
`;

/** Typechecks `files` in `directory` with strict settings, as an application's tsconfig would. */
function typecheck(directory: string, files: string[]): void {
  writeFileSync(
    join(directory, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", skipLibCheck: true,
        noUnusedLocals: true, exactOptionalPropertyTypes: false, types: ["node"], typeRoots: [join(root, "node_modules/@types")],
      },
      files,
    }),
  );
  const result = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(directory, "tsconfig.json")], { encoding: "utf8" });
  expect(result.stdout + result.stderr).toBe("");
  expect(result.status).toBe(0);
}

const quiet = { stdout: { write: () => true }, stderr: { write: () => true } };

afterAll(removeTemporaryDirectories);

describe("silk codegen", () => {
  it("generates a module for examples/ that typechecks", () => {
    const directory = temporaryDirectory();
    const out = join(directory, "examples.ts");
    expect(runCodegen(loadSchemaSources(join(root, "examples")), out, undefined, quiet)).toBe(0);
    const code = readFileSync(out, "utf8");
    expect(code).toContain("export function GetUser(client: SilkClient, params: GetUserParams): Promise<GetUserResult>");
    expect(code).toContain("followers: UserNode[];");
    expect(code).toMatch(/^import type \{ Json, SilkClient \} from "[^"]+\/sdk\/client\.js";$/m);
    typecheck(directory, ["examples.ts"]);
  });

  describe("a richer project", () => {
    let database: Database;
    let app: FastifyInstance;
    let base: string;
    let directory: string;

    beforeAll(async () => {
      const sources = [{ file: "schema.hx", text: RICH_SCHEMA }, { file: "queries.hx", text: RICH_QUERIES }];
      database = await Database.open({ storage: "memory", schema: sources });
      ({ app, base } = await listeningGateway(database));
      directory = temporaryDirectory();
      expect(runCodegen(sources, join(directory, "rich.ts"), undefined, quiet)).toBe(0);
      writeFileSync(join(directory, "caller.ts"), RICH_CALLER);
    });

    afterAll(async () => {
      await app?.close();
      await database?.close();
    });

    it("typechecks with a caller that pins its types down", () => {
      typecheck(directory, ["rich.ts", "caller.ts"]);
    });

    it("runs end to end and answers what its types say", async () => {
      const caller = (await import(pathToFileURL(join(directory, "caller.ts")).href)) as { scenario(url: string): Promise<Record<string, any>> };
      const r = await caller.scenario(base);
      expect(r.ann).toEqual({
        id: expect.stringMatching(/^[0-9]+$/), label: "User", handle: "ann", name: "Ann", age: 0, big: "18446744073709551615",
        tags: ["a"], address: { zip: 1234 }, joined: "2024-05-01T00:00:00.000Z",
      });
      expect(r.link).toMatchObject({ label: "Follows", from_node: r.bob.id, to_node: r.ann.id, since: "2024-07-01T00:00:00.000Z" });
      expect(r.doc).toMatchObject({ label: "Doc", data: [0.5, 1.5], title: "about Hi" });
      expect(r.profile).toMatchObject({ user: r.ann, followers: [r.bob], n: 1, posts: [r.post], ids: [r.bob.id] });
      expect(r.profile.rows).toEqual([{ handle: "bob", name: "Bob", followers: 1 }]);
      expect(r.profile.links).toEqual([expect.objectContaining({ label: "Follows", from_node: r.ann.id, to_node: r.bob.id })]);
      expect(r.byHandle).toEqual({ found: r.bob, kind: "user", pair: [r.bob, 1] });
      expect(r.everyone.users).toHaveLength(2);
      expect(r.everyone.first).toEqual(r.ann);
      expect(r.authors).toEqual({ authors: [r.ann], docs: [r.doc] });
      expect(r.many.made.map((user: { name: string }) => user.name)).toEqual(["x", "y"]);
      expect(r.hello).toBe("hello");
    });
  });

  it("refuses a project that does not check, printing its diagnostics, and writes nothing", () => {
    const broken = [{ file: "bad.hx", text: "N::User { name: String }\nQUERY Q(id: ID) =>\n    u <- N<Nope>(id)\n    RETURN u\n" }];
    const result = generateClientModule(broken, "./client.js");
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.errors).toMatch(/bad\.hx:3:.*unknown_label/);

    const directory = temporaryDirectory();
    writeFileSync(join(directory, "bad.hx"), broken[0].text);
    const out = join(directory, "out.ts");
    const cli = spawnSync(process.execPath, [join(root, "node_modules/tsx/dist/cli.mjs"), join(root, "bin/silk.ts"), "codegen", directory, "--out", out], { encoding: "utf8" });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toMatch(/unknown_label/);
    expect(cli.stderr).toMatch(/silk codegen: the project does not check; nothing was written/);
    expect(existsSync(out)).toBe(false);
  });

  it("refuses generated names that would clash or not compile", () => {
    const clash = generateClientModule([{ file: "a.hx", text: "N::User { name: String }\nQUERY UserNode() =>\n    RETURN \"x\"\n" }], "./client.js");
    expect(clash.ok ? "" : clash.errors).toMatch(/UserNode of QUERY UserNode is already taken by N::User/);
    const reserved = generateClientModule([{ file: "a.hx", text: "N::User { name: String }\nQUERY delete() =>\n    RETURN \"x\"\n" }], "./client.js");
    expect(reserved.ok ? "" : reserved.errors).toMatch(/reserved word/);
  });

  it("imports the SilkClient type from --sdk-import when given", () => {
    const result = generateClientModule(loadSchemaSources(join(root, "examples")), "silk-db/sdk/client.js");
    expect(result.ok ? result.code : "").toContain('import type { Json, SilkClient } from "silk-db/sdk/client.js";');
  });
});
