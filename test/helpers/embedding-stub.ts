/**
 * A stub OpenAI-compatible embedding server for tests: node:http on 127.0.0.1, a random port. It records every
 * request (method, path, headers, JSON body) and answers from a script of replies, one per request, then with the
 * default: for each input text a vector of `dimension` numbers derived from the text (its length, its index in the
 * batch, and char codes), listed in REVERSE index order so that clients must sort by `index`.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface StubRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: { model?: unknown; input?: unknown; dimensions?: unknown };
}

/** One scripted answer: a status and body (a string is sent as it is), headers, or a delay before answering. */
export interface StubReply {
  readonly status?: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly delayMs?: number;
  /** Close the connection without answering. */
  readonly hangUp?: boolean;
}

export interface EmbeddingStub {
  readonly baseUrl: string;
  readonly requests: StubRequest[];
  /** Replies for the next requests, in order; after them the default answer. */
  script(...replies: (StubReply | ((request: StubRequest) => StubReply))[]): void;
  close(): Promise<void>;
}

/** The vector the default answer gives for a text: deterministic, so tests can predict it. */
export function stubVector(text: string, dimension: number): number[] {
  const vector = [text.length];
  for (let i = 1; i < dimension; i += 1) vector.push(text.charCodeAt((i - 1) % text.length) / 100);
  return vector;
}

export function defaultAnswer(request: StubRequest, dimension: number): StubReply {
  const input = request.body.input as string[];
  const data = input.map((text, index) => ({ object: "embedding", index, embedding: stubVector(text, dimension) })).reverse();
  return { status: 200, body: { object: "list", data, model: request.body.model, usage: { prompt_tokens: 1, total_tokens: 1 } } };
}

export async function startEmbeddingStub(options: { readonly dimension?: number } = {}): Promise<EmbeddingStub> {
  const dimension = options.dimension ?? 4;
  const requests: StubRequest[] = [];
  const pending: (StubReply | ((request: StubRequest) => StubReply))[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      let body: StubRequest["body"] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as StubRequest["body"];
      } catch {
        body = {};
      }
      const request: StubRequest = { method: incoming.method ?? "", path: incoming.url ?? "", headers: incoming.headers, body };
      requests.push(request);
      const next = pending.shift();
      const reply = next === undefined ? defaultAnswer(request, dimension) : typeof next === "function" ? next(request) : next;
      const send = (): void => {
        if (reply.hangUp === true) {
          incoming.socket.destroy();
          return;
        }
        const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body ?? {});
        outgoing.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
        outgoing.end(text);
      };
      if (reply.delayMs !== undefined) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => pending.push(...replies),
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}
