/**
 * A fault-injecting TCP proxy (docs/CHAOS.md, "partition"): it listens on a loopback port of its own and forwards
 * each connection to one target (a NATS server's client port), byte for byte, until told otherwise:
 *
 * - `partition()`: a black hole. Bytes of open connections are held, in order, in both directions; a new
 *   connection is accepted but its target is not dialled (the SYN "does not arrive"). Nothing is closed, as in a
 *   real partition: each side finds out by its own timeouts (a NATS request's, a lease renewal's).
 * - `heal()`: what was held is delivered (TCP would have retransmitted it), connections accepted meanwhile dial
 *   their target, and forwarding resumes. A late byte is then the peer's problem: a deposed leader's held append
 *   reaches JetStream after another leader's and is refused by its expected-sequence guard.
 * - `drop()`: every open connection is cut (both sockets destroyed) and new ones are closed at once, until heal().
 * - `delay(ms)`: every byte is delivered `ms` after it arrived (order kept); `delay(0)` ends it.
 *
 * The harness puts one proxy between each Silk process and each NATS server (chaos/network.ts), so partitioning a
 * process's proxies isolates that process from every NATS server while the others keep talking. The proxy reads
 * the real clock on purpose: it shapes real sockets.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

interface Held {
  readonly chunk: Buffer;
  /** performance.now() instant at which it may be delivered. */
  readonly at: number;
}

/** One direction of one connection: chunks wait here until the proxy's state lets them through. */
class Pipe {
  private readonly queue: Held[] = [];
  private timer: NodeJS.Timeout | undefined;
  destination: Socket | undefined;

  constructor(private readonly proxy: FaultProxy) {}

  /** Bytes waiting to be delivered. */
  get bytes(): number {
    return this.queue.reduce((sum, held) => sum + held.chunk.length, 0);
  }

  push(chunk: Buffer): void {
    this.queue.push({ chunk, at: performance.now() + this.proxy.delayMs });
    this.pump();
  }

  /** Delivers what is due, unless the proxy holds everything or there is nowhere to deliver yet. */
  pump(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.proxy.partitioned || this.destination === undefined) return;
    const now = performance.now();
    while (this.queue.length > 0 && this.queue[0].at <= now) this.destination.write(this.queue.shift()!.chunk);
    if (this.queue.length > 0) this.timer = setTimeout(() => this.pump(), this.queue[0].at - now);
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

/** A proxied connection: the client's socket, the target's (once dialled) and the two directions between them. */
class Link {
  readonly up: Pipe;
  readonly down: Pipe;
  upstream: Socket | undefined;
  private closed = false;

  constructor(
    private readonly proxy: FaultProxy,
    readonly client: Socket,
  ) {
    this.up = new Pipe(proxy);
    this.down = new Pipe(proxy);
    this.down.destination = client;
    client.on("data", (chunk: Buffer) => this.up.push(chunk));
    client.on("close", () => this.close());
    client.on("error", () => this.close());
  }

  /** Dials the target (once; not while partitioned). */
  dial(): void {
    if (this.closed || this.upstream !== undefined || this.proxy.partitioned) return;
    const upstream = connect(this.proxy.target.port, this.proxy.target.host);
    this.upstream = upstream;
    upstream.on("data", (chunk: Buffer) => this.down.push(chunk));
    upstream.on("close", () => this.close());
    upstream.on("error", () => this.close());
    upstream.on("connect", () => {
      this.up.destination = upstream;
      this.up.pump();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.up.close();
    this.down.close();
    this.client.destroy();
    this.upstream?.destroy();
    this.proxy.forget(this);
  }
}

export interface ProxyTarget {
  readonly host: string;
  readonly port: number;
}

export class FaultProxy {
  /** Whether every byte is held and no new connection is dialled (partition()). */
  partitioned = false;
  /** How long each byte waits before it is delivered (delay()). */
  delayMs = 0;
  private dropping = false;
  private readonly links = new Set<Link>();

  private constructor(
    private readonly server: Server,
    readonly target: ProxyTarget,
    readonly port: number,
  ) {}

  /** Listens on a free loopback port, forwarding to `target`. */
  static async start(target: ProxyTarget): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer({ noDelay: true }, (client) => proxy?.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    if (typeof address !== "object" || address === null) throw new Error("the proxy has no port");
    proxy = new FaultProxy(server, target, address.port);
    return proxy;
  }

  /** `nats://127.0.0.1:<port>`: the URL a process is given instead of the target's. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Open connections (accepted and not yet closed). */
  get connections(): number {
    return this.links.size;
  }

  /** Bytes received and not yet delivered, both directions, every connection (what a partition or a delay holds). */
  get heldBytes(): number {
    return [...this.links].reduce((sum, link) => sum + link.up.bytes + link.down.bytes, 0);
  }

  partition(): void {
    this.dropping = false;
    this.partitioned = true;
  }

  drop(): void {
    this.partitioned = false;
    this.dropping = true;
    for (const link of [...this.links]) link.close();
  }

  delay(ms: number): void {
    this.delayMs = Math.max(0, ms);
  }

  /** Ends partition() and drop() (a delay stays until delay(0)). */
  heal(): void {
    this.partitioned = false;
    this.dropping = false;
    for (const link of [...this.links]) {
      link.dial();
      link.up.pump();
      link.down.pump();
    }
  }

  /** Stops listening and cuts every connection. */
  async close(): Promise<void> {
    for (const link of [...this.links]) link.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.dropping) {
      client.destroy();
      return;
    }
    const link = new Link(this, client);
    this.links.add(link);
    link.dial();
  }

  /** @internal A link that closed. */
  forget(link: Link): void {
    this.links.delete(link);
  }
}
