/**
 * HelixQL's `WHERE` straight on `N<T>`, `E<T>` or `V<T>` takes its candidates from a secondary index when one of its
 * AND-ed comparisons (EQ, IS_IN, GT/GTE/LT/LTE) is on an indexed field (issue 22, "the planner sees HelixQL"): the
 * filter becomes the source's own predicate, which the planner reads. `explainQuery` shows the access path; every
 * answer is compared with the same filter computed here over all records, so an index that answered differently from
 * a scan would fail too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type Database } from "../../index.js";

const SCHEMA = `
N::User { INDEX age: U32, INDEX city: String, name: String }
E::Rates { From: User, To: User, Properties: { INDEX stars: I32, note: String } }
V::Doc { INDEX topic: String }

QUERY AddUser(age: U32, city: String, name: String) => u <- AddN<User>({age: age, city: city, name: name}) RETURN u
QUERY Rate(from: ID, to: ID, stars: I32) => AddE<Rates>({stars: stars, note: "n"})::From(from)::To(to) RETURN "ok"
QUERY AddDoc(v: [F64], topic: String) => d <- AddV<Doc>(v, {topic: topic}) RETURN d

QUERY AgeIs(a: U32) => u <- N<User>::WHERE(_::{age}::EQ(a)) RETURN u
QUERY AgeOver(a: U32) => u <- N<User>::WHERE(_::{age}::GT(a)) RETURN u
QUERY AgeAtMost(a: U32) => u <- N<User>::WHERE(_::{age}::LTE(a)) RETURN u
QUERY CityIn(cities: [String]) => u <- N<User>::WHERE(_::{city}::IS_IN(cities)) RETURN u
QUERY CityFrom(c: String) => u <- N<User>::WHERE(_::{city}::GTE(c)) RETURN u
QUERY Both(a: U32, c: String) => u <- N<User>::WHERE(AND(_::{age}::GTE(a), _::{city}::EQ(c))) RETURN u
QUERY Either(a: U32, c: String) => u <- N<User>::WHERE(OR(_::{age}::EQ(a), _::{city}::EQ(c))) RETURN u
QUERY NameIs(n: String) => u <- N<User>::WHERE(_::{name}::EQ(n)) RETURN u
QUERY AgeBand(low: U32, high: U32) => u <- N<User>::WHERE(_::{age}::GTE(low))::WHERE(_::{age}::LT(high)) RETURN u
QUERY Stars(s: I32) => r <- E<Rates>::WHERE(_::{stars}::EQ(s)) RETURN r
QUERY Topic(t: String) => d <- V<Doc>::WHERE(_::{topic}::EQ(t)) RETURN d
QUERY Older(a: U32) => u <- N<User>::WHERE(_::{age}::GT(a))::Out<Rates> RETURN u
`;

const CITIES = ["Oslo", "Lima", "Pune", "Kobe", "Nice"];
let db: Database;
const users: { id: string; age: number; city: string; name: string }[] = [];

beforeAll(async () => {
  db = await open({ storage: "memory", schema: SCHEMA });
  for (let i = 0; i < 200; i++) {
    const user = (await db.query("AddUser", { age: i % 50, city: CITIES[i % 5], name: `n${i % 7}` })) as { u: { id: string } };
    users.push({ id: user.u.id, age: i % 50, city: CITIES[i % 5], name: `n${i % 7}` });
  }
  for (let i = 0; i < 60; i++) await db.query("Rate", { from: users[i].id, to: users[i + 1].id, stars: i % 5 });
  for (let i = 0; i < 30; i++) await db.query("AddDoc", { v: [i, 1, 2], topic: i % 3 === 0 ? "graphs" : "other" });
});
afterAll(async () => {
  await db.close();
});

const idsOf = (answer: unknown, key: string): string[] => ((answer as Record<string, { id: string }[]>)[key]).map((record) => record.id);
const expected = (keep: (user: (typeof users)[number]) => boolean): string[] => users.filter(keep).map((user) => user.id);

describe("HelixQL WHERE on an indexed field reads the index", () => {
  const cases: [string, Record<string, unknown>, (user: (typeof users)[number]) => boolean, string][] = [
    ["AgeIs", { a: 7 }, (u) => u.age === 7, "User.age"],
    ["AgeOver", { a: 45 }, (u) => u.age > 45, "User.age"],
    ["AgeAtMost", { a: 2 }, (u) => u.age <= 2, "User.age"],
    ["CityIn", { cities: ["Lima", "Kobe"] }, (u) => u.city === "Lima" || u.city === "Kobe", "User.city"],
    ["CityFrom", { c: "Oslo" }, (u) => u.city >= "Oslo", "User.city"],
    // An equality is preferred to a range: 40 candidates (one city) rather than the 60 users aged 35 or more.
    ["Both", { a: 35, c: "Nice" }, (u) => u.age >= 35 && u.city === "Nice", "User.city"],
    // Two WHEREs in a row are one AND: the first range reads the index, the second filters the candidates.
    ["AgeBand", { low: 10, high: 12 }, (u) => u.age >= 10 && u.age < 12, "User.age"],
  ];
  for (const [query, parameters, keep, index] of cases) {
    it(`${query}: the index's candidates, the scan's answer`, async () => {
      const want = expected(keep);
      expect(idsOf(await db.query(query, parameters), "u")).toEqual(want);
      const [step] = await db.explainQuery(query, parameters);
      expect(step).toMatchObject({ step: "nodes_where", access: "index", index });
      expect(step.candidates).toBeGreaterThanOrEqual(want.length);
      expect(step.candidates).toBeLessThan(users.length);
    });
  }

  it("an edge source and a vector source read their indexes too", async () => {
    const stars = await db.query("Stars", { s: 3 });
    expect(idsOf(stars, "r")).toHaveLength(12);
    expect(await db.explainQuery("Stars", { s: 3 })).toMatchObject([{ step: "edges_where", access: "index", index: "Rates.stars", candidates: 12 }]);
    expect(idsOf(await db.query("Topic", { t: "graphs" }), "d")).toHaveLength(10);
    expect(await db.explainQuery("Topic", { t: "graphs" })).toMatchObject([{ step: "vectors_where", access: "index", index: "Doc.topic", candidates: 10 }]);
  });

  it("a traversal after the filter starts from the index's records", async () => {
    const answer = (await db.query("Older", { a: 48 })) as { u: { id: string }[] };
    const sources = new Set(expected((u) => u.age > 48).filter((id) => users.findIndex((u) => u.id === id) < 60));
    const want = users.filter((_, i) => i < 60 && sources.has(users[i].id)).map((_, j, kept) => users[users.indexOf(kept[j]) + 1].id);
    expect(answer.u.map((user) => user.id)).toEqual(want);
    expect(await db.explainQuery("Older", { a: 48 })).toMatchObject([{ step: "nodes_where", access: "index", index: "User.age" }]);
  });

  it("scans the label when no AND-ed comparison is on an indexed field", async () => {
    expect(idsOf(await db.query("Either", { a: 3, c: "Pune" }), "u")).toEqual(expected((u) => u.age === 3 || u.city === "Pune"));
    expect(await db.explainQuery("Either", { a: 3, c: "Pune" })).toMatchObject([{ access: "label_scan", candidates: 200 }]);
    expect(idsOf(await db.query("NameIs", { n: "n3" }), "u")).toEqual(expected((u) => u.name === "n3"));
    expect(await db.explainQuery("NameIs", { n: "n3" })).toMatchObject([{ access: "label_scan", candidates: 200 }]);
  });

  it("explainQuery refuses a write query and an unknown one, and checks parameters", async () => {
    await expect(db.explainQuery("AddUser", { age: 1, city: "x", name: "y" })).rejects.toMatchObject({ code: "unsupported_operation" });
    await expect(db.explainQuery("Nope")).rejects.toMatchObject({ code: "query_not_found" });
    await expect(db.explainQuery("AgeIs", { a: "7" })).rejects.toMatchObject({ code: "invalid_type" });
    expect(users).toHaveLength(200);
  });
});
