/**
 * How the chaos clients turn an HTTP answer into an outcome (docs/CHAOS.md, "Outcomes"): against a local HTTP
 * server that answers what each case needs, and against a port nobody listens on.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../cluster/nats/servers.js";
import { chaosProjectDirectory, httpCall, workloadOf, WORKLOADS } from "../../chaos/workloads.js";
import { seededRandom } from "../../protocol/random.js";
import { loadSchemaSources } from "../../bin/schema-files.js";
import { checkProject } from "../../protocol/helixql/query-check.js";

let server: Server;
let base: string;
const answers: Record<string, { status: number; body: unknown; delayMs?: number }> = {
  Fine: { status: 200, body: { register: { value: 3 } } },
  Refused: { status: 400, body: { error: "invalid_type", msg: "x" } },
  Unavailable: { status: 503, body: { error: "partition_unavailable", msg: "x" } },
  NotLeader: { status: 503, body: { error: "not_leader", msg: "x" } },
  Deadline: { status: 408, body: { error: "query_timeout", msg: "x" } },
  Slow: { status: 200, body: {}, delayMs: 5_000 },
};

beforeAll(async () => {
  server = createServer((request, response) => {
    const answer = answers[request.url!.slice(1)];
    setTimeout(() => {
      response.writeHead(answer.status, { "content-type": "application/json" });
      response.end(JSON.stringify(answer.body));
    }, answer.delayMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("chaos client outcomes", () => {
  it("ok on 200, with the body", async () => {
    expect(await httpCall(base, 10_000)("Fine", {}, true)).toEqual({ outcome: "ok", body: { register: { value: 3 } } });
  });

  it("a write refused before it ran fails; one whose outcome is in doubt is unknown", async () => {
    const call = httpCall(base, 10_000);
    expect(await call("Refused", {}, true)).toEqual({ outcome: "fail", error: "invalid_type" });
    expect(await call("NotLeader", {}, true)).toEqual({ outcome: "fail", error: "not_leader" });
    expect(await call("Unavailable", {}, true)).toEqual({ outcome: "unknown", error: "partition_unavailable" });
    expect(await call("Deadline", {}, true)).toEqual({ outcome: "unknown", error: "query_timeout" });
    expect(await httpCall(base, 300)("Slow", {}, true)).toEqual({ outcome: "unknown", error: "TimeoutError" });
  });

  it("a read that did not answer 200 failed, whatever the reason", async () => {
    expect(await httpCall(base, 10_000)("Unavailable", {}, false)).toEqual({ outcome: "fail", error: "partition_unavailable" });
    expect(await httpCall(base, 300)("Slow", {}, false)).toEqual({ outcome: "fail", error: "TimeoutError" });
  });

  it("a refused connection fails a write (nothing was sent)", async () => {
    const port = await freePort();
    expect(await httpCall(`http://127.0.0.1:${port}`, 500)("Fine", {}, true)).toEqual({ outcome: "fail", error: "ECONNREFUSED" });
  });
});

describe("chaos workloads", () => {
  it("call only queries of the harness's project, which checks", () => {
    const project = checkProject(loadSchemaSources(chaosProjectDirectory()));
    expect(project.diagnostics).toEqual([]);
    const declared = new Set(project.queries.map((query) => query.name));
    for (const name of WORKLOADS) for (const query of workloadOf(name, "run").queries) expect(declared, `${name}: ${query}`).toContain(query);
  });

  it("draw each client's operations from its own generator: the same seed gives the same sequence", () => {
    for (const name of WORKLOADS) {
      const draw = (): unknown[] => {
        const workload = workloadOf(name, "run");
        const random = seededRandom(9);
        return Array.from({ length: 50 }, () => {
          const operation = workload.next(random, 2);
          return [operation.f, operation.value];
        });
      };
      expect(draw()).toEqual(draw());
    }
  });
});
