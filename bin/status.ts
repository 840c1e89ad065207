/**
 * `silk status --data <dir>`: the storage of a disk database, partition by partition — the file's size and LMDB's
 * map size, used and free pages, the last transaction, and the reader slots with how many commits each snapshot is
 * behind (docs/SERVER.md). It opens the partitions read-only, so it runs beside a server that holds the directory;
 * opening clears the slots of readers whose process died (they would keep the file growing), so every reader it
 * lists is alive (its own slot left out). `--json` prints the same as one JSON object.
 */
import { storageStatus } from "../runtime/embedded.js";
import type { StorageStatus } from "../node/store/partition-store.js";

export interface StatusIo {
  readonly stdout: NodeJS.WritableStream;
}

export async function runStatus(flags: { readonly data: string; readonly json?: boolean }, io: StatusIo): Promise<void> {
  // The command reads the statistics inside a read transaction of its own: a slot that says nothing about the database.
  const partitions = (await storageStatus(flags.data)).map((status) => ({
    ...status,
    readers: status.readers.filter((reader) => reader.pid !== process.pid),
  }));
  io.stdout.write(flags.json === true ? `${JSON.stringify({ partitions })}\n` : partitions.map(describe).join(""));
}

function mebibytes(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

function describe(status: StorageStatus, index: number): string {
  const lines = [
    `partition ${index} (${status.path})`,
    `  file ${mebibytes(status.fileBytes)}, map ${mebibytes(status.mapSizeBytes)}`,
    `  pages: ${status.usedPages} used, ${status.freePages} of them free (${status.pageSize} bytes each)`,
    `  last transaction ${status.lastTxnId}; stale reader slots cleared by this command: ${status.staleReadersCleared}`,
    `  readers: ${status.readers.length} of ${status.maxReaders} slots`,
    ...status.readers.map((reader) =>
      reader.txnId === undefined
        ? `    pid ${reader.pid}: idle`
        : `    pid ${reader.pid}: reads transaction ${reader.txnId}, ${reader.behindTxns} commits behind`,
    ),
  ];
  return `${lines.join("\n")}\n`;
}
