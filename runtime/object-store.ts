/**
 * The object store under S3 storage (docs/STORAGE.md): the few operations the bucket log needs, over
 * `@aws-sdk/client-s3`, with S3's answers turned into the outcomes the callers branch on. A conditional PUT that the
 * store refuses (412) is an answer (`"precondition_failed"`), not an error: it is how the single-writer fence speaks.
 * Everything else that fails after the SDK's retries is `storage_unavailable`, except a missing bucket
 * (`bucket_not_found`) and refused or missing credentials (`storage_denied`), which retrying does not mend.
 *
 * Why here: only runtime/ may reach the network client; node/ and cluster/ see the bucket through the WriteLog and
 * DecisionStore interfaces (node/actor/partition-actor.ts, cluster/decision-log.ts).
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  type PutObjectCommandInput,
} from "@aws-sdk/client-s3";
import { SilkError } from "../protocol/errors.js";

export interface ObjectStoreOptions {
  readonly bucket: string;
  /** Key prefix of the database, without a trailing slash ("" for the bucket's root). */
  readonly prefix: string;
  /** An S3-compatible endpoint (path-style addressing); absent: AWS S3 in `region`. */
  readonly endpoint?: string;
  /** Absent: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. */
  readonly region?: string;
  /** Absent: the SDK's default chain (AWS environment variables, ~/.aws/config and ~/.aws/credentials). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
  /** How long one operation may take, retries included (default OBJECT_REQUEST_DEADLINE_MS). */
  readonly requestDeadlineMs?: number;
  /** Attempts per operation for retryable failures (500, 503, throttling, dropped connections); default OBJECT_REQUEST_ATTEMPTS. */
  readonly maxAttempts?: number;
}

export const OBJECT_REQUEST_DEADLINE_MS = 10_000;
/**
 * A file larger than this is uploaded in parts of this size (multipart upload), one part in memory at a time; a
 * smaller one in one PUT. S3 takes parts of 5 MiB (OBJECT_PART_BYTES_MIN) to 5 GiB, at most 10,000 of them.
 */
export const OBJECT_PART_BYTES = 64 * 1024 * 1024;
export const OBJECT_PART_BYTES_MIN = 5 * 1024 * 1024;
const OBJECT_PARTS_MAX = 10_000;
export const OBJECT_REQUEST_ATTEMPTS = 5;
/** Keys a single list call returns at most (S3's page size). */
export const OBJECT_LIST_PAGE_KEYS_MAX = 1_000;
/** DELETE requests in flight at once while retention deletes old objects. */
const OBJECT_DELETES_AT_ONCE = 16;

/** An object's bytes and its entity tag (unquoted, as `putIfMatch` takes it). */
export interface StoredObject {
  readonly body: Uint8Array;
  readonly etag: string;
}

export type ConditionalPut = { readonly outcome: "written"; readonly etag: string } | { readonly outcome: "precondition_failed" };

/**
 * Ceph RGW 16 compares If-Match with the stored ETag without its quotes (a quoted one never matches), so ETags are
 * kept and sent unquoted.
 */
function unquote(etag: string | undefined): string {
  if (etag === undefined) throw new SilkError("storage_unavailable", "the object store answered a write or read without an ETag");
  return etag.replace(/^W\//, "").replace(/^"|"$/g, "");
}

/** AWS_REGION, else AWS_DEFAULT_REGION (the variables the AWS CLI and SDKs read); undefined when neither is set. */
function regionFromEnvironment(): string | undefined {
  for (const name of ["AWS_REGION", "AWS_DEFAULT_REGION"]) {
    const value = process.env[name];
    if (value !== undefined && value !== "") return value;
  }
  return undefined;
}

export class ObjectStore {
  private readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  private readonly deadlineMs: number;

  constructor(options: ObjectStoreOptions) {
    if (typeof options.bucket !== "string" || options.bucket === "") throw new SilkError("invalid_option", "storage.s3.bucket must be a bucket name");
    if (/^\/|\/$/.test(options.prefix)) throw new SilkError("invalid_option", "storage.s3.prefix must not begin or end with /");
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    for (const key of ["requestDeadlineMs", "maxAttempts"] as const) {
      const value = options[key];
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw new SilkError("invalid_option", `storage.s3.${key} must be a positive integer`);
    }
    this.deadlineMs = options.requestDeadlineMs ?? OBJECT_REQUEST_DEADLINE_MS;
    this.client = new S3Client({
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint, forcePathStyle: true }),
      // The SDK reads AWS_REGION itself only when no region is given, and then fails without one; an S3-compatible
      // endpoint usually accepts any region, so us-east-1 is the last resort.
      region: options.region ?? regionFromEnvironment() ?? "us-east-1",
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      maxAttempts: options.maxAttempts ?? OBJECT_REQUEST_ATTEMPTS,
    });
  }

  /** The full key of a name under the database's prefix. */
  key(name: string): string {
    return this.prefix === "" ? name : `${this.prefix}/${name}`;
  }

  /** The object, or undefined when there is none. */
  async get(name: string): Promise<StoredObject | undefined> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(name) }), this.signal());
      if (answer.Body === undefined) throw new SilkError("storage_unavailable", `the object store answered ${name} without a body`);
      return { body: await answer.Body.transformToByteArray(), etag: unquote(answer.ETag) };
    } catch (cause) {
      if (cause instanceof S3ServiceException && (cause.name === "NoSuchKey" || cause.$metadata.httpStatusCode === 404) && cause.name !== "NoSuchBucket") return undefined;
      throw this.failure(cause, `GET ${name}`);
    }
  }

  /** Writes the object only if none exists under the name (`If-None-Match: *`). */
  putIfAbsent(name: string, body: Uint8Array): Promise<ConditionalPut> {
    return this.conditionalPut(name, body, { IfNoneMatch: "*" });
  }

  /** Replaces the object only if its current ETag is `etag` (`If-Match`). */
  putIfMatch(name: string, body: Uint8Array, etag: string): Promise<ConditionalPut> {
    return this.conditionalPut(name, body, { IfMatch: etag });
  }

  /**
   * Uploads the file at `path` as `name` (a snapshot's file: bucket-snapshots.ts), in one `If-None-Match: *` PUT when
   * it is at most `partBytes`, else as a multipart upload of `partBytes` parts, each its own request with its own
   * deadline and retries (a failed upload is aborted, so its parts do not stay in the bucket). A multipart upload is
   * not conditional (not every S3-compatible store takes a condition on its completion): it is for objects only their
   * writer names, which a repeat writes with the same bytes.
   */
  async putFile(name: string, path: string, partBytes = OBJECT_PART_BYTES): Promise<ConditionalPut> {
    if (!Number.isSafeInteger(partBytes) || partBytes < OBJECT_PART_BYTES_MIN) throw new SilkError("invalid_option", `a part must be at least ${OBJECT_PART_BYTES_MIN} bytes (S3's smallest), got ${partBytes}`);
    const size = statSync(path).size;
    const descriptor = openSync(path, "r");
    try {
      const read = (offset: number, length: number): Uint8Array => {
        const buffer = Buffer.allocUnsafe(length);
        let filled = 0;
        while (filled < length) {
          const count = readSync(descriptor, buffer, filled, length - filled, offset + filled);
          if (count === 0) throw new SilkError("storage_error", `${path} ended at ${offset + filled} bytes while ${size} were uploaded: it changed during the upload`);
          filled += count;
        }
        return buffer;
      };
      if (size <= partBytes) return await this.putIfAbsent(name, read(0, size));
      const parts = Math.ceil(size / partBytes);
      if (parts > OBJECT_PARTS_MAX) throw new SilkError("invalid_option", `${path} (${size} bytes) needs ${parts} parts of ${partBytes} bytes, over S3's ${OBJECT_PARTS_MAX}: use larger parts`);
      return await this.multipartUpload(name, parts, (part) => read(part * partBytes, Math.min(partBytes, size - part * partBytes)));
    } finally {
      closeSync(descriptor);
    }
  }

  private async multipartUpload(name: string, parts: number, body: (part: number) => Uint8Array): Promise<ConditionalPut> {
    const key = this.key(name);
    let uploadId: string | undefined;
    try {
      uploadId = (await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }), this.signal())).UploadId;
      if (uploadId === undefined) throw new SilkError("storage_unavailable", `the object store answered the multipart upload of ${name} without an upload ID`);
      const etags: { ETag: string; PartNumber: number }[] = [];
      // One part at a time: one part's bytes in memory, and each part's request has the whole deadline.
      for (let part = 0; part < parts; part += 1) {
        const answer = await this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: part + 1, Body: body(part) }), this.signal());
        if (answer.ETag === undefined) throw new SilkError("storage_unavailable", `the object store answered part ${part + 1} of ${name} without an ETag`);
        etags.push({ ETag: answer.ETag, PartNumber: part + 1 });
      }
      const done = await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: etags } }), this.signal());
      return { outcome: "written", etag: unquote(done.ETag) };
    } catch (cause) {
      if (uploadId !== undefined) {
        // Best effort: the failure is what the caller needs; parts of an upload never completed are invisible to reads.
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }), this.signal()).catch(() => undefined);
      }
      throw this.failure(cause, `multipart PUT ${name}`);
    }
  }

  /** Names (without the prefix) under `folder`, in key order, after `startAfter` when given; one page at most. */
  async list(folder: string, startAfter?: string, limit = OBJECT_LIST_PAGE_KEYS_MAX): Promise<string[]> {
    const prefix = this.key(folder.endsWith("/") ? folder : `${folder}/`);
    try {
      const answer = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          MaxKeys: limit,
          ...(startAfter === undefined ? {} : { StartAfter: this.key(startAfter) }),
        }),
        this.signal(),
      );
      const strip = this.prefix === "" ? 0 : this.prefix.length + 1;
      return (answer.Contents ?? []).flatMap((object) => (object.Key === undefined ? [] : [object.Key.slice(strip)]));
    } catch (cause) {
      throw this.failure(cause, `LIST ${folder}`);
    }
  }

  /**
   * Deletes the objects (retention: docs/STORAGE.md); a name already gone is no failure. One DELETE per object, a few
   * at a time: S3's DeleteObjects needs a checksum header that older S3-compatible servers do not all accept.
   */
  async delete(names: readonly string[]): Promise<void> {
    for (let start = 0; start < names.length; start += OBJECT_DELETES_AT_ONCE) {
      await Promise.all(
        names.slice(start, start + OBJECT_DELETES_AT_ONCE).map(async (name) => {
          try {
            await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(name) }), this.signal());
          } catch (cause) {
            throw this.failure(cause, `DELETE ${name}`);
          }
        }),
      );
    }
  }

  close(): void {
    this.client.destroy();
  }

  private async conditionalPut(name: string, body: Uint8Array, condition: Pick<PutObjectCommandInput, "IfMatch" | "IfNoneMatch">): Promise<ConditionalPut> {
    try {
      const answer = await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(name), Body: body, ...condition }), this.signal());
      return { outcome: "written", etag: unquote(answer.ETag) };
    } catch (cause) {
      // 412: the condition failed. 409 ConditionalRequestConflict: AWS's answer to a conditional write racing another
      // one on the same key; the other one won, so it is the same outcome.
      const status = cause instanceof S3ServiceException ? cause.$metadata.httpStatusCode : undefined;
      if (status === 412 || (status === 409 && (cause as S3ServiceException).name === "ConditionalRequestConflict")) return { outcome: "precondition_failed" };
      throw this.failure(cause, `PUT ${name}`);
    }
  }

  private signal(): { abortSignal: AbortSignal } {
    return { abortSignal: AbortSignal.timeout(this.deadlineMs) };
  }

  private failure(cause: unknown, what: string): SilkError {
    if (cause instanceof SilkError) return cause;
    if (cause instanceof S3ServiceException && cause.name === "NoSuchBucket") {
      return new SilkError("bucket_not_found", `the bucket ${JSON.stringify(this.bucket)} does not exist (create it first: Silk never creates buckets)`);
    }
    if (cause instanceof S3ServiceException && (cause.$metadata.httpStatusCode === 403 || cause.name === "InvalidAccessKeyId" || cause.name === "SignatureDoesNotMatch")) {
      return new SilkError("storage_denied", `the object store refused ${what} in bucket ${JSON.stringify(this.bucket)}: ${cause.name} (check the credentials and their rights)`);
    }
    if (cause instanceof Error && cause.name === "CredentialsProviderError") {
      return new SilkError("storage_denied", `no credentials for bucket ${JSON.stringify(this.bucket)}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials (${cause.message})`);
    }
    const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    return new SilkError("storage_unavailable", `the object store did not complete ${what} in bucket ${JSON.stringify(this.bucket)} within ${this.deadlineMs} ms and its retries (${detail})`);
  }
}
