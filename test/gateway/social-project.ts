/**
 * The small HelixQL project the query suites share (embedded `query()`, the `POST /<QueryName>` routes, the
 * helix-ts client, `silk dev`): users who follow each other, and one query of each kind — create, point read,
 * edge creation returning a literal, a 1-hop traversal, and a query without parameters.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const SOCIAL_SCHEMA = `N::User { name: String, age: U8 }
E::Follows { From: User, To: User }
`;

export const SOCIAL_QUERIES = `QUERY CreateUser(name: String, age: U8) =>
    user <- AddN<User>({name: name, age: age})
    RETURN user

QUERY GetUser(id: ID) =>
    user <- N<User>(id)
    RETURN user

QUERY Follow(a: ID, b: ID) =>
    AddE<Follows>::From(a)::To(b)
    RETURN "ok"

QUERY Followers(id: ID) =>
    users <- N<User>(id)::In<Follows>
    RETURN users

QUERY AllUsers() =>
    users <- N<User>
    RETURN users
`;

export const SOCIAL_QUERY_NAMES = ["CreateUser", "GetUser", "Follow", "Followers", "AllUsers"];

/** The project as `open({ schema })` takes it: two files, as diagnostics name them. */
export const SOCIAL_SOURCES = [
  { file: "schema.hx", text: SOCIAL_SCHEMA },
  { file: "queries.hx", text: SOCIAL_QUERIES },
];

/** Writes the project's two files into `directory`. */
export function writeSocialProject(directory: string): void {
  writeFileSync(join(directory, "schema.hx"), SOCIAL_SCHEMA);
  writeFileSync(join(directory, "queries.hx"), SOCIAL_QUERIES);
}
