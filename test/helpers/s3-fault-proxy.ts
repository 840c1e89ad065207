/**
 * A fault-injecting HTTP proxy in front of the test S3 server (test/helpers/s3-server.ts), for the object-store fault
 * tests: each request is matched against the rules in order; the first that matches (and has uses left) decides
 * whether it is answered 503 or 500 without reaching the store, forwarded and then answered 500 (the store did it, the
 * client cannot know), forwarded late, or held without an answer (a writer then stops there, for a SIGKILL at that
 * point). Requests pass through unchanged otherwise, Host header included, so their signatures stay valid.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type FaultAction =
  /** Answered 503 SlowDown-like ServiceUnavailable without reaching the store. */
  | "503"
  /** Answered 500 InternalError without reaching the store. */
  | "500"
  /** Forwarded (the store applies it), then answered 500. */
  | "500-after"
  /** Never answered. */
  | "hold"
  /** Forwarded (the store applies it), then never answered. */
  | "hold-after"
  /** Forwarded after a delay. */
  | { readonly delayMs: number };

export interface FaultRule {
  /** Which requests (method and path, the path with its query) it applies to; absent: all. */
  readonly match?: (method: string, path: string) => boolean;
  readonly action: FaultAction;
  /** How many requests it applies to (default: all). */
  times?: number;
}

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string;
  /** The action taken, or "pass". */
  readonly outcome: string;
  /** When the proxy received it (performance.now()). */
  readonly atMs: number;
}

export interface FaultProxy {
  readonly endpoint: string;
  /** Consulted in order for every request; push, splice or clear at will. */
  readonly rules: FaultRule[];
  readonly seen: SeenRequest[];
  /** Requests held without an answer so far. */
  held(): number;
  stop(): Promise<void>;
}

function s3Error(response: ServerResponse, status: number, code: string): void {
  response.writeHead(status, { "content-type": "application/xml" });
  response.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected by the test proxy</Message></Error>`);
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const rules: FaultRule[] = [];
  const seen: SeenRequest[] = [];
  const heldResponses: ServerResponse[] = [];

  const forward = (incoming: IncomingMessage, body: Buffer): Promise<{ status: number; headers: IncomingMessage["headers"]; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const outgoing = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
        answer.on("error", reject);
      });
      outgoing.on("error", reject);
      outgoing.end(body);
    });

  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      void (async () => {
        const method = incoming.method ?? "GET";
        const path = incoming.url ?? "/";
        const rule = rules.find((candidate) => (candidate.times === undefined || candidate.times > 0) && (candidate.match?.(method, path) ?? true));
        if (rule?.times !== undefined) rule.times -= 1;
        const action = rule?.action;
        seen.push({ method, path, authorization: String(incoming.headers.authorization ?? ""), outcome: action === undefined ? "pass" : typeof action === "string" ? action : `delay ${action.delayMs}`, atMs: performance.now() });
        const body = Buffer.concat(chunks);
        try {
          if (action === "503") return s3Error(response, 503, "ServiceUnavailable");
          if (action === "500") return s3Error(response, 500, "InternalError");
          if (action === "hold") return void heldResponses.push(response);
          if (typeof action === "object") await new Promise((resolve) => setTimeout(resolve, action.delayMs));
          const answer = await forward(incoming, body);
          if (action === "500-after") return s3Error(response, 500, "InternalError");
          if (action === "hold-after") return void heldResponses.push(response);
          response.writeHead(answer.status, answer.headers);
          response.end(answer.body);
        } catch {
          if (!response.headersSent) s3Error(response, 502, "BadGateway");
        }
      })();
    });
  });
  // Node closes a keep-alive connection idle for 5 s by default; a client that reuses it at that instant reads
  // ECONNRESET, which a test with one attempt per request would take for a fault it did not inject.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    rules,
    seen,
    held: () => heldResponses.length,
    stop: async () => {
      for (const response of heldResponses.splice(0)) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
