/**
 * Every index a schema declares, in all three families (protocol/indexes.ts): `INDEX` and `UNIQUE INDEX` fields
 * (secondary), `VECTOR INDEX` fields and the own vector of every `V::` type (vector), `TEXT INDEX` fields (text).
 *
 * Invariants: names are `<Type>.<field>`, and `<Type>.$vector` (VECTOR_FIELD) for a `V::` type's own vector;
 * definitions come in declaration order (nodes, edges, vectors; fields in order, a `V::` type's own index before
 * its fields'); the checker guarantees at most one index per field, so names are unique within a kind. A secondary
 * index only exists on a scalar field, as node/indexes/secondary-index.ts has always built them.
 */
import { VECTOR_FIELD, type IndexDefinition } from "./indexes.js";
import type { EdgeTypeDecl, FieldDecl, NodeTypeDecl, Schema, VectorTypeDecl } from "./schema.js";

export function schemaIndexDefinitions(schema: Schema | undefined): IndexDefinition[] {
  if (schema === undefined) return [];
  const definitions: IndexDefinition[] = [];
  const declared: (NodeTypeDecl | EdgeTypeDecl | VectorTypeDecl)[] = [...schema.nodes.values(), ...schema.edges.values(), ...schema.vectors.values()];
  for (const type of declared) {
    const base = (field: string) => ({ kind: type.kind, label: type.name, field, name: `${type.name}.${field}` });
    if (type.kind === "vector") definitions.push({ ...base(VECTOR_FIELD), family: "vector", ...type.index });
    for (const field of type.fields.values()) {
      const definition = fieldIndex(field, base(field.name));
      if (definition !== undefined) definitions.push(definition);
    }
  }
  return definitions;
}

type Base = Pick<IndexDefinition, "kind" | "label" | "field" | "name">;

function fieldIndex(field: FieldDecl, base: Base): IndexDefinition | undefined {
  if (field.vectorIndex !== undefined) return { ...base, family: "vector", ...field.vectorIndex };
  if (field.textIndex !== undefined) return { ...base, family: "text", ...field.textIndex };
  if (field.index !== undefined && field.type.kind === "scalar") {
    return { ...base, family: "secondary", unique: field.index === "unique", type: field.type.name };
  }
  return undefined;
}
