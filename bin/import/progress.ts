/**
 * The progress display of `silk import` on stderr: records read, bytes read (of the total when known) and the
 * rate. On a terminal it redraws one line in place a few times a second; otherwise (a log file, CI) it writes a
 * plain line every few seconds, so that logs stay readable. The clock is passed in, so the text is testable.
 */

export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface ProgressOptions {
  readonly output: ProgressOutput;
  readonly now: () => number;
  readonly totalBytes: number;
  /** Redraw interval on a terminal, and line interval otherwise. */
  readonly ttyIntervalMs?: number;
  readonly plainIntervalMs?: number;
}

const TTY_INTERVAL_MS = 250;
const PLAIN_INTERVAL_MS = 5_000;

export class ImportProgress {
  records = 0;
  private bytesOfFinishedFiles = 0;
  private current: { readonly bytesRead: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly startedMs: number;
  private drawn = false;

  constructor(private readonly options: ProgressOptions) {
    this.startedMs = options.now();
  }

  /** Bytes read so far, over every file. */
  get bytes(): number {
    return this.bytesOfFinishedFiles + (this.current?.bytesRead ?? 0);
  }

  get elapsedMs(): number {
    return this.options.now() - this.startedMs;
  }

  /** Follows a new file's stream; the previous one counts as finished. */
  track(stream: { readonly bytesRead: number }): void {
    this.finishFile();
    this.current = stream;
  }

  finishFile(): void {
    if (this.current !== undefined) this.bytesOfFinishedFiles += this.current.bytesRead;
    this.current = undefined;
  }

  start(): void {
    const tty = this.options.output.isTTY === true;
    const interval = tty ? (this.options.ttyIntervalMs ?? TTY_INTERVAL_MS) : (this.options.plainIntervalMs ?? PLAIN_INTERVAL_MS);
    this.timer = setInterval(() => this.draw(), interval);
    // The display must never keep the process alive on its own.
    this.timer.unref();
  }

  /** Stops the display and, on a terminal, clears the line so the summary starts on a clean one. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.drawn && this.options.output.isTTY === true) this.options.output.write("\r\x1b[2K");
  }

  draw(): void {
    const line = this.line();
    if (this.options.output.isTTY === true) this.options.output.write(`\r\x1b[2K${line}`);
    else this.options.output.write(`${line}\n`);
    this.drawn = true;
  }

  line(): string {
    const seconds = Math.max(this.elapsedMs, 1) / 1000;
    const total = this.options.totalBytes;
    const bytes = this.bytes;
    const share = total > 0 ? ` of ${formatBytes(total)} (${Math.min(100, Math.floor((bytes / total) * 100))}%)` : "";
    return `silk import: ${formatCount(this.records)} records, ${formatBytes(bytes)}${share}, ${formatCount(Math.round(this.records / seconds))} records/s`;
  }
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
