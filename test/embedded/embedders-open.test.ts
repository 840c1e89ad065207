/**
 * Embedded databases use the built-in embedding providers as the servers do: the package exports them to pass as
 * `open({ embedder })`, and without that option `open()` takes the provider the SILK_EMBED_* variables choose. With
 * neither, Embed's error tells an embedded user what to pass, not to restart a server.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FeatureHashingEmbedder, open, SilkError, type Embedder } from "../../index.js";

const SCHEMA = `V::Doc { title: String }
QUERY AddDoc(text: String) => doc <- AddV<Doc>(Embed(text), {title: text}) RETURN doc`;

const saved = { ...process.env };
afterEach(() => {
  for (const name of ["SILK_EMBED_PROVIDER", "SILK_EMBED_DIMENSIONS", "OPENAI_API_KEY"]) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

/** The dimension of the vector Embed stored for one text. */
async function embeddedDimension(embedder?: Embedder): Promise<number> {
  const db = await open({ storage: "memory", schema: SCHEMA, ...(embedder === undefined ? {} : { embedder }) });
  try {
    const { doc } = (await db.query("AddDoc", { text: "a graph database" })) as { doc: { id: string } };
    const read = (await db.run({
      request_type: "read",
      query: { read: { entries: [{ query: { name: "v", root: { vectors: { reference: { ids: [doc.id] } } } } }], returns: ["v"] } },
    })) as { v: { $vector: number[] }[] };
    return read.v[0].$vector.length;
  } finally {
    await db.close();
  }
}

describe("embedding providers in an embedded database", () => {
  it("takes an exported provider as open({ embedder })", async () => {
    expect(await embeddedDimension(new FeatureHashingEmbedder({ dimensions: 16 }))).toBe(16);
  });

  it("takes the provider SILK_EMBED_* choose when no embedder is given", async () => {
    process.env.SILK_EMBED_PROVIDER = "hashing";
    process.env.SILK_EMBED_DIMENSIONS = "8";
    expect(await embeddedDimension()).toBe(8);
  });

  it("refuses a bad SILK_EMBED_* setting at open, naming the variable", async () => {
    process.env.SILK_EMBED_PROVIDER = "word2vec";
    await expect(open({ storage: "memory", schema: SCHEMA })).rejects.toMatchObject({ code: "invalid_option", message: expect.stringContaining("SILK_EMBED_PROVIDER") });
  });

  it("without either, Embed says to pass open({ embedder })", async () => {
    delete process.env.SILK_EMBED_PROVIDER;
    delete process.env.OPENAI_API_KEY;
    const error = await embeddedDimension().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SilkError);
    expect(error).toMatchObject({ code: "embedding_not_configured", message: expect.stringContaining("open({ embedder })") });
  });
});
