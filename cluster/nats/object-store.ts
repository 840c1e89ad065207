/**
 * The cluster's JetStream Object Store bucket (NATS ADR-20), through @nats-io/obj: the layout the NATS clients' object
 * stores use, so `nats object ls|get` reads what Silk wrote. The library writes and reads it (chunks on
 * `$O.<bucket>.C.<nuid>`, then the info with the SHA-256 digest on `$O.<bucket>.M.<name>` as the commit point, the
 * previous object's chunks purged once it is replaced; the digest checked as an object is read). What Silk adds:
 *
 * - the bucket's stream is file storage with the cluster's replica count, and creating it races the other replicas
 *   doing the same (`creatingRacing`); `bind` answers undefined where no bucket exists;
 * - a put takes an async iterable (the snapshot's files are packed on the fly) in chunks of up to 512 KiB (ADR-20's
 *   default, 128 KiB, costs four times the acknowledgements; the library clamps it to the server's max_payload);
 * - a read hands the chunks to a writer as they come (a snapshot goes to disk, never whole into memory), ends when
 *   none came for READ_IDLE_MS (the library's read waits for ever on chunks purged under it), and answers
 *   `snapshot_invalid` for an object that is cut short or does not match its digest.
 *
 * Invariant: `read` hands out bytes only of an object whose info it read first, and fails with `snapshot_invalid`
 * unless they add up to the info's size and SHA-256 digest; a caller must treat what it was handed as unusable until
 * `read` resolved.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { Objm, type ObjectInfo, type ObjectStore } from "@nats-io/obj";
import { SilkError } from "../../protocol/errors.js";
import { creatingRacing, whileUnanswered } from "./partition-log.js";

/** ADR-20's default is 128 KiB; larger chunks cost fewer acknowledgements (the library clamps to max_payload). */
const CHUNK_BYTES_MAX = 512 * 1024;
/** How long a put waits for each chunk's acknowledgement. */
const PUBLISH_TIMEOUT_MS = 10_000;
/** A read that receives no chunk for this long ends (short: `snapshot_invalid`). */
const READ_IDLE_MS = 10_000;

export class ObjectBucket {
  /** The bucket's stream, `OBJ_<bucket>`. */
  readonly stream: string;

  private constructor(
    private readonly store: ObjectStore,
    readonly bucket: string,
  ) {
    this.stream = `OBJ_${bucket}`;
  }

  /** Binds to the bucket, creating its stream when absent (idempotent across processes). */
  static async open(nc: NatsConnection, bucket: string, replicas: number): Promise<ObjectBucket> {
    await whileUnanswered(() => jetstreamManager(nc)); // JetStream answers before the library looks the stream up
    const objm = new Objm(nc);
    const store = await creatingRacing(async () => {
      const created = await objm.create(bucket, { replicas, storage: StorageType.File });
      // The library creates the stream only where it was told "stream not found" and ignores other errors of that
      // look-up: the status shows the stream exists (or throws the error, retried while JetStream has no answer).
      await created.status();
      return created;
    });
    return new ObjectBucket(store, bucket);
  }

  /** Binds to the bucket when its stream exists; undefined when it does not. */
  static async bind(nc: NatsConnection, bucket: string): Promise<ObjectBucket | undefined> {
    const jsm = await whileUnanswered(() => jetstreamManager(nc));
    const objm = new Objm(nc);
    const store = await objm.open(bucket, false);
    const bound = new ObjectBucket(store, bucket);
    try {
      await jsm.streams.info(bound.stream);
      return bound;
    } catch (cause) {
      if (cause instanceof JetStreamApiError && cause.code === JetStreamApiCodes.StreamNotFound) return undefined;
      throw cause;
    }
  }

  /** Stores `source`'s bytes as the object `name`, replacing any object of that name once whole. */
  async put(name: string, source: AsyncIterable<Uint8Array>, description?: string): Promise<ObjectInfo> {
    const meta = { name, options: { max_chunk_size: CHUNK_BYTES_MAX }, ...(description === undefined ? {} : { description }) };
    return this.store.put(meta, streamOf(source), { timeout: PUBLISH_TIMEOUT_MS });
  }

  /** The object's info; undefined when there is none of that name, or it was deleted. */
  async info(name: string): Promise<ObjectInfo | undefined> {
    const info = await this.store.info(name);
    return info === null || info.deleted ? undefined : info;
  }

  /** Every object of the bucket (deleted ones left out). */
  async list(): Promise<ObjectInfo[]> {
    return (await this.store.list()).filter((info) => !info.deleted);
  }

  /**
   * Hands the object's bytes to `write` in order (awaiting each) and answers its info once they proved whole (see the
   * module comment); undefined when there is no such object.
   */
  async read(name: string, write: (chunk: Uint8Array) => Promise<void>): Promise<ObjectInfo | undefined> {
    const invalid = (why: string): SilkError => new SilkError("snapshot_invalid", `object ${name} of ${this.stream} ${why}`);
    let result;
    try {
      result = await this.store.get(name);
    } catch (cause) {
      if (cause instanceof Error && /digest/.test(cause.message)) throw invalid(`has an info the library cannot read: ${cause.message}`);
      throw cause;
    }
    if (result === null) return undefined;
    const { info } = result;
    const reader = result.data.getReader();
    let size = 0;
    let stalled = false;
    let done = false;
    let idle: NodeJS.Timeout | undefined;
    try {
      while (!done) {
        idle = setTimeout(() => {
          stalled = true;
          void reader.cancel();
        }, READ_IDLE_MS);
        let chunk: Uint8Array | undefined;
        try {
          ({ done, value: chunk } = await reader.read());
        } catch (cause) {
          // The library fails the stream when the chunks it read do not match the info's digest, or its consumer failed.
          throw invalid(`is not whole: ${cause instanceof Error ? cause.message : String(cause)}`);
        } finally {
          clearTimeout(idle);
        }
        if (chunk === undefined) continue;
        size += chunk.byteLength;
        await write(chunk);
      }
    } finally {
      // `write` failed (the library's consumer stops), or the stream failed (nothing left to cancel).
      if (!done) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
    if (stalled || size !== info.size) throw invalid(`is not whole: ${size} of ${info.size} bytes${stalled ? `, then no chunk for ${READ_IDLE_MS} ms` : ""}`);
    return info;
  }

  /** Deletes the object (its info is marked deleted, its chunks purged); a missing one is fine. */
  async delete(name: string): Promise<void> {
    if ((await this.info(name)) !== undefined) await this.store.delete(name);
  }
}

/** `source` as the web stream the library reads (pulled one piece at a time; a cancelled stream ends the source). */
function streamOf(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const pieces = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await pieces.next();
      if (next.done === true) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await pieces.return?.();
    },
  });
}
