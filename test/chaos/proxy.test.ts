/**
 * The chaos harness's fault-injecting TCP proxy (chaos/proxy.ts) in front of an echo server: it forwards both ways;
 * a partition holds every byte of open connections and dials nothing for new ones, and heal delivers what was held
 * and dials; drop cuts open connections and closes new ones until heal; a delay holds each byte at least its length.
 * Waits are for conditions (bytes held, connections seen), never for a fixed time.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FaultProxy } from "../../chaos/proxy.js";

interface Echo {
  readonly server: Server;
  readonly port: number;
  /** Bytes the echo server received, and connections it accepted (read through to the server's counts). */
  readonly received: number;
  readonly accepted: number;
}

let echo: Echo;
let proxy: FaultProxy;
const clients: Socket[] = [];

beforeEach(async () => {
  const state = { received: 0, accepted: 0 };
  const server = createServer((socket) => {
    state.accepted += 1;
    socket.on("data", (chunk) => {
      state.received += chunk.length;
      socket.write(chunk);
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("no port");
  echo = { server, port: address.port, received: 0, accepted: 0 };
  const current = echo;
  Object.defineProperties(current, { received: { get: () => state.received }, accepted: { get: () => state.accepted } });
  proxy = await FaultProxy.start({ host: "127.0.0.1", port: echo.port });
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await proxy.close();
  await new Promise<void>((resolve) => echo.server.close(() => resolve()));
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

/** A client of the proxy that collects what comes back. */
async function client(): Promise<{ socket: Socket; text: () => string; closed: () => boolean }> {
  const socket = connect(proxy.port, "127.0.0.1");
  clients.push(socket);
  let text = "";
  let closed = false;
  socket.on("data", (chunk) => (text += chunk.toString()));
  socket.on("close", () => (closed = true));
  socket.on("error", () => undefined);
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, text: () => text, closed: () => closed };
}

describe("the fault proxy", () => {
  it("forwards both ways", async () => {
    const c = await client();
    c.socket.write("hello");
    await until(() => c.text() === "hello");
    expect(proxy.url).toBe(`nats://127.0.0.1:${proxy.port}`);
  });

  it("partition holds every byte of an open connection; heal delivers them in order", async () => {
    const c = await client();
    c.socket.write("before");
    await until(() => c.text() === "before");
    proxy.partition();
    c.socket.write("one,");
    c.socket.write("two");
    await until(() => proxy.heldBytes === "one,two".length);
    expect(echo.received).toBe("before".length); // held in the proxy: the target has none of them
    expect(c.text()).toBe("before");
    proxy.heal();
    await until(() => c.text() === "beforeone,two");
    expect(proxy.heldBytes).toBe(0);
  });

  it("partition dials nothing for a new connection (its bytes wait); heal dials and delivers", async () => {
    proxy.partition();
    const c = await client();
    c.socket.write("late");
    await until(() => proxy.heldBytes === 4 && proxy.connections === 1);
    expect(echo.accepted).toBe(0);
    proxy.heal();
    await until(() => c.text() === "late");
    expect(echo.accepted).toBe(1);
  });

  it("drop cuts open connections and closes new ones until heal", async () => {
    const open = await client();
    open.socket.write("x");
    await until(() => open.text() === "x");
    proxy.drop();
    await until(() => open.closed());
    const refused = await client();
    await until(() => refused.closed());
    expect(proxy.connections).toBe(0);
    proxy.heal();
    const again = await client();
    again.socket.write("back");
    await until(() => again.text() === "back");
  });

  it("delay holds each byte at least the delay, in order", async () => {
    const c = await client();
    proxy.delay(150);
    const sent = performance.now();
    c.socket.write("a");
    c.socket.write("b");
    await until(() => c.text() === "ab");
    // Each direction waits the delay: at least two of them before the echo is back (a timer may fire 1 ms early).
    expect(performance.now() - sent).toBeGreaterThanOrEqual(2 * 150 - 2);
    proxy.delay(0);
    c.socket.write("c");
    await until(() => c.text() === "abc");
  });
});
