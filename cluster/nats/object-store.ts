/**
 * A JetStream Object Store bucket (NATS ADR-20), written and read through @nats-io/jetstream: the layout the NATS
 * clients' object stores use, so `nats object ls|get` reads what Silk wrote. (The @nats-io/obj package is not a
 * dependency of Silk; this module implements the part of it Silk needs: put, get, info, list, delete.)
 *
 * - Bucket `B` is the stream `OBJ_B` (file storage, `num_replicas` as the cluster's streams, discard new, rollup
 *   headers allowed) over the subjects `$O.B.C.>` (chunks) and `$O.B.M.>` (object infos).
 * - An object is its chunks, published in order on `$O.B.C.<nuid>` (a fresh nuid per put), then its info (JSON: name,
 *   bucket, nuid, size, chunks, digest `SHA-256=<base64url>`) on `$O.B.M.<base64url of the name>` with the header
 *   `Nats-Rollup: sub`, which leaves only the newest info of the name. The info is the commit point: a put that fails
 *   before it leaves chunks no info names (purged when it can), and readers keep the previous object.
 * - A put over an existing name purges the old object's chunks after its info is replaced; a delete writes an info
 *   marked `deleted` and purges the chunks.
 *
 * Invariant: `read` hands out bytes only of an object whose info it read first, and fails with `snapshot_invalid`
 * unless the chunks it read add up to the info's size, count and SHA-256 digest; a caller must treat what it was
 * handed as unusable until `read` resolved.
 */
import { createHash } from "node:crypto";
import { headers, nuid, type NatsConnection } from "@nats-io/nats-core";
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import { SilkError } from "../../protocol/errors.js";
import { messageBytesMax } from "./message-size.js";
import { creatingRacing, whileUnanswered } from "./partition-log.js";

/** ADR-20's default is 128 KiB; larger chunks cost fewer acknowledgements (bounded by the server's max_payload). */
const CHUNK_BYTES_MAX = 512 * 1024;
/** Room for the headers of a chunk message. */
const CHUNK_HEADROOM_BYTES = 4 * 1024;
/** Chunk publishes in flight at once during a put. */
const PUBLISH_WINDOW = 32;
const PUBLISH_TIMEOUT_MS = 10_000;
/** A read that receives no chunk for this long ends (short: `snapshot_invalid`). */
const READ_IDLE_MS = 10_000;

export interface ObjectInfo {
  readonly name: string;
  readonly bucket: string;
  readonly nuid: string;
  readonly size: number;
  readonly chunks: number;
  /** `SHA-256=<base64url, padded>`, as ADR-20 writes it. */
  readonly digest: string;
  readonly description?: string;
  readonly deleted?: boolean;
}

export class ObjectBucket {
  readonly stream: string;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly bucket: string,
  ) {
    this.stream = `OBJ_${bucket}`;
  }

  /** Binds to the bucket, creating its stream when absent (idempotent across processes). */
  static async open(nc: NatsConnection, bucket: string, replicas: number): Promise<ObjectBucket> {
    const jsm = await whileUnanswered(() => jetstreamManager(nc));
    const store = new ObjectBucket(nc, jetstream(nc), jsm, bucket);
    await creatingRacing(async () => {
      try {
        await jsm.streams.info(store.stream);
      } catch (cause) {
        if (!(cause instanceof JetStreamApiError && cause.code === JetStreamApiCodes.StreamNotFound)) throw cause;
        await jsm.streams.add({
          name: store.stream,
          subjects: [`$O.${bucket}.C.>`, `$O.${bucket}.M.>`],
          num_replicas: replicas,
          storage: StorageType.File,
          discard: DiscardPolicy.New,
          allow_rollup_hdrs: true,
          allow_direct: true,
        });
      }
    });
    return store;
  }

  /** Binds to the bucket when its stream exists; undefined when it does not. */
  static async bind(nc: NatsConnection, bucket: string): Promise<ObjectBucket | undefined> {
    const jsm = await whileUnanswered(() => jetstreamManager(nc));
    const store = new ObjectBucket(nc, jetstream(nc), jsm, bucket);
    try {
      await jsm.streams.info(store.stream);
      return store;
    } catch (cause) {
      if (cause instanceof JetStreamApiError && cause.code === JetStreamApiCodes.StreamNotFound) return undefined;
      throw cause;
    }
  }

  private chunkSubject(id: string): string {
    return `$O.${this.bucket}.C.${id}`;
  }

  private metaSubject(name: string): string {
    return `$O.${this.bucket}.M.${encodeName(name)}`;
  }

  /** Stores `source`'s bytes as the object `name`, replacing any object of that name once whole. */
  async put(name: string, source: AsyncIterable<Uint8Array>, description?: string): Promise<ObjectInfo> {
    const id = nuid.next();
    const subject = this.chunkSubject(id);
    const chunkBytes = Math.min(CHUNK_BYTES_MAX, messageBytesMax(this.nc) - CHUNK_HEADROOM_BYTES);
    const hash = createHash("sha256");
    const inFlight: Promise<PubAck>[] = [];
    let size = 0;
    let chunks = 0;
    let pending = Buffer.alloc(0);
    const send = async (chunk: Buffer): Promise<void> => {
      hash.update(chunk);
      size += chunk.byteLength;
      chunks += 1;
      inFlight.push(this.js.publish(subject, chunk, { timeout: PUBLISH_TIMEOUT_MS }));
      if (inFlight.length >= PUBLISH_WINDOW) await inFlight.shift();
    };
    try {
      for await (const piece of source) {
        pending = pending.byteLength === 0 ? Buffer.from(piece) : Buffer.concat([pending, piece]);
        while (pending.byteLength >= chunkBytes) {
          await send(pending.subarray(0, chunkBytes));
          pending = pending.subarray(chunkBytes);
        }
      }
      if (pending.byteLength > 0) await send(pending);
      await Promise.all(inFlight);
    } catch (cause) {
      await Promise.allSettled(inFlight);
      await this.jsm.streams.purge(this.stream, { filter: subject }).catch(() => undefined);
      throw cause;
    }
    const previous = await this.info(name);
    const info: ObjectInfo = { name, bucket: this.bucket, nuid: id, size, chunks, digest: `SHA-256=${base64url(hash.digest())}`, ...(description === undefined ? {} : { description }) };
    await this.publishInfo(info);
    if (previous !== undefined) await this.jsm.streams.purge(this.stream, { filter: this.chunkSubject(previous.nuid) });
    return info;
  }

  private async publishInfo(info: ObjectInfo): Promise<void> {
    const head = headers();
    head.set("Nats-Rollup", "sub");
    await this.js.publish(this.metaSubject(info.name), JSON.stringify(info), { headers: head, timeout: PUBLISH_TIMEOUT_MS });
  }

  /** The object's info; undefined when there is none of that name, or it was deleted. */
  async info(name: string): Promise<ObjectInfo | undefined> {
    const message = await this.jsm.streams.getMessage(this.stream, { last_by_subj: this.metaSubject(name) });
    if (message === null) return undefined;
    const info = JSON.parse(new TextDecoder().decode(message.data)) as ObjectInfo;
    return info.deleted === true ? undefined : info;
  }

  /** Every object of the bucket (deleted ones left out). */
  async list(): Promise<ObjectInfo[]> {
    const state = (await this.jsm.streams.info(this.stream, { subjects_filter: `$O.${this.bucket}.M.>` })).state;
    const infos: ObjectInfo[] = [];
    for (const subject of Object.keys(state.subjects ?? {})) {
      const message = await this.jsm.streams.getMessage(this.stream, { last_by_subj: subject });
      if (message === null) continue;
      const info = JSON.parse(new TextDecoder().decode(message.data)) as ObjectInfo;
      if (info.deleted !== true) infos.push(info);
    }
    return infos;
  }

  /**
   * Hands the object's bytes to `write` in order (awaiting each) and answers its info once they proved whole (see the
   * module comment); undefined when there is no such object.
   */
  async read(name: string, write: (chunk: Uint8Array) => Promise<void>): Promise<ObjectInfo | undefined> {
    const info = await this.info(name);
    if (info === undefined) return undefined;
    const hash = createHash("sha256");
    let size = 0;
    let chunks = 0;
    if (info.chunks > 0) {
      const consumer = await this.js.consumers.get(this.stream, { filter_subjects: this.chunkSubject(info.nuid) });
      const messages = await consumer.consume({ max_messages: 16 });
      // Chunks purged under the read (the object replaced meanwhile) never come: the read ends short after a while.
      let idle: NodeJS.Timeout | undefined;
      const watch = (): void => {
        clearTimeout(idle);
        idle = setTimeout(() => void messages.stop(), READ_IDLE_MS);
      };
      watch();
      try {
        for await (const message of messages) {
          watch();
          hash.update(message.data);
          size += message.data.byteLength;
          chunks += 1;
          await write(message.data);
          if (chunks === info.chunks || message.info.pending === 0) break;
        }
      } finally {
        clearTimeout(idle);
        await messages.close();
      }
    }
    const digest = `SHA-256=${base64url(hash.digest())}`;
    if (chunks !== info.chunks || size !== info.size || digest !== info.digest) {
      throw new SilkError("snapshot_invalid", `object ${name} of ${this.stream} is not whole: ${chunks} of ${info.chunks} chunks, ${size} of ${info.size} bytes, digest ${digest} (its info says ${info.digest})`);
    }
    return info;
  }

  /** Deletes the object (its info is marked deleted, its chunks purged); a missing one is fine. */
  async delete(name: string): Promise<void> {
    const info = await this.info(name);
    if (info === undefined) return;
    await this.publishInfo({ name, bucket: this.bucket, nuid: info.nuid, size: 0, chunks: 0, digest: "", deleted: true });
    await this.jsm.streams.purge(this.stream, { filter: this.chunkSubject(info.nuid) });
  }
}

/** base64url with padding, as ADR-20 writes names and digests. */
function base64url(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString("base64url");
  return text + "=".repeat((4 - (text.length % 4)) % 4);
}

function encodeName(name: string): string {
  return base64url(Buffer.from(name, "utf8"));
}
