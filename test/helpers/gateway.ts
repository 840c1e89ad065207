/** A real HTTP gateway for tests: buildGateway listening on a free loopback port, and the URL to reach it. */
import type { FastifyInstance } from "fastify";
import { buildGateway, type GatewayOptions } from "../../gateway/server.js";

export interface ListeningGateway {
  readonly app: FastifyInstance;
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  readonly base: string;
}

export async function listeningGateway(database: GatewayOptions["database"]): Promise<ListeningGateway> {
  const app = await buildGateway({ database });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("the gateway has no TCP address");
  return { app, base: `http://127.0.0.1:${address.port}` };
}
