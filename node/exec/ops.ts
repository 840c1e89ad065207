/**
 * How the executor is written once and runs both synchronously and asynchronously. A function that may have to wait
 * (a deadline's pause, a remote partition's read, an embedder's call) answers a `Maybe<T>`: its value when nothing
 * waited, else an `Op<T>`, a generator that yields the promises it waits for and is resumed with what they resolve
 * to. The steps a common read passes are plain functions composed with `andThen`, which builds a generator only for
 * a value that is not ready; rarer steps are generator functions (`yield* wait(x)` on a Maybe). Nothing awaits by
 * itself; a driver decides what a yielded promise means:
 *
 * - `runNow` runs an op to completion in one synchronous run, or gives it up at its first yield (`op.return()`, so no
 *   line of it runs after the yield) and answers NOT_NOW. lmdb-js's shared read transaction
 *   (`store.synchronousSnapshot()`) is valid only within one synchronous run, so a read on it runs this way; a read
 *   that must wait runs again with `drive` on a held snapshot.
 * - `drive` runs an op synchronously as far as it goes and returns its value when it never yielded; at its first
 *   yield it continues asynchronously and returns a promise. A held snapshot (and a write inside the write queue)
 *   stays valid across the wait, so nothing runs twice.
 * - `runAsync` is `drive` for callers that want a promise whatever happens (a cluster coordinator, whose reads are
 *   remote).
 *
 * A generator costs 0.2-0.3 µs per level even when it never yields, and an async function a promise and microtask per
 * await (an await cost about half of a point read): a point read that never waits builds neither. Code that cannot
 * wait (per-element inner loops, renderers) stays plain, and the reads of a TxnView answer a plain value when they
 * need not wait.
 */

/** A computation that may have to wait: yields the promises it waits for, returns a T. */
export type Op<T> = Generator<PromiseLike<unknown>, T, unknown>;

/** A value now, a promise of one (a remote base), or an op that may have to wait for it (a paced read). */
export type Maybe<T> = T | PromiseLike<T> | Op<T>;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as PromiseLike<unknown>).then === "function";
}

function isOp(value: unknown): value is Op<unknown> {
  return typeof value === "object" && value !== null && typeof (value as Op<unknown>).next === "function" && typeof (value as Op<unknown>).throw === "function";
}

/**
 * Whether a Maybe is a value already (no promise, no op). Hot call sites test this before `yield* wait(...)`, so a
 * read that needs no wait builds no generator: `const r = view.records(kind, ids); const records = ready(r) ? r : yield* wait(r);`.
 */
export function ready<T>(value: Maybe<T>): value is T {
  return typeof value !== "object" || value === null || (typeof (value as PromiseLike<T>).then !== "function" && typeof (value as Op<T>).next !== "function");
}

/** The value of a Maybe: yields a promise (resumed with what it resolves to), runs an op, returns a value as it is. */
export function* wait<T>(value: Maybe<T>): Op<T> {
  if (isOp(value)) return yield* value as Op<T>;
  if (isThenable(value)) return (yield value) as T;
  return value as T;
}

/**
 * `f` of `m`'s value: called at once when `m` is ready (no generator is built), otherwise from an op that waits for
 * `m` first. The plain steps of the executor compose with it, so a run that never waits builds no generator.
 */
export function andThen<T, U>(m: Maybe<T>, f: (value: T) => Maybe<U>): Maybe<U> {
  return ready(m) ? f(m) : thenOp(m, f);
}

function* thenOp<T, U>(m: Maybe<T>, f: (value: T) => Maybe<U>): Op<U> {
  const next = f(yield* wait(m));
  return ready(next) ? next : yield* wait(next);
}

/** What `runNow` answers for an op that had to wait (it was given up). */
export const NOT_NOW: unique symbol = Symbol("not now");

/**
 * Runs `op` to its end without waiting: its value, or NOT_NOW when it yielded (it is given up there, its `finally`
 * blocks run, and the promise it yielded is left unobserved but caught, so its rejection is never unhandled).
 */
export function runNow<T>(run: Maybe<T>): T | typeof NOT_NOW {
  if (ready(run)) return run;
  if (!isOp(run)) {
    run.then(undefined, () => undefined);
    return NOT_NOW;
  }
  const op = run as Op<T>;
  const step = op.next();
  if (step.done) return step.value;
  step.value.then(undefined, () => undefined);
  op.return(undefined as T);
  return NOT_NOW;
}

/** A Maybe as a plain value when it needs no wait, otherwise as a promise (an op is driven: `drive`). */
export function settle<T>(value: Maybe<T>): T | Promise<T> {
  if (isOp(value)) return drive(value as Op<T>);
  if (isThenable(value)) return Promise.resolve(value);
  return value as T;
}

/**
 * Runs `op` synchronously until it ends (its value) or yields; from its first yield on it runs asynchronously, resumed
 * after each yielded promise settles (a rejection is thrown into it where it yielded), and the answer is a promise.
 */
export function drive<T>(run: Maybe<T>): T | Promise<T> {
  if (ready(run)) return run;
  if (!isOp(run)) return Promise.resolve(run);
  const op = run as Op<T>;
  const step = op.next();
  if (step.done) return step.value;
  return continueAsync(op, step.value);
}

async function continueAsync<T>(op: Op<T>, pending: PromiseLike<unknown>): Promise<T> {
  for (;;) {
    let step: IteratorResult<PromiseLike<unknown>, T>;
    try {
      const resolved = await pending;
      step = op.next(resolved);
    } catch (cause) {
      // Either the promise rejected (thrown into the op, which may catch it) or next() threw (the op failed: rethrown
      // by throw() on a finished generator).
      step = op.throw(cause);
    }
    if (step.done) return step.value;
    pending = step.value;
  }
}

/** `drive` for callers that want a promise whether or not the op waited. */
export function runAsync<T>(run: Maybe<T>): Promise<T> {
  try {
    return Promise.resolve(drive(run));
  } catch (cause) {
    return Promise.reject(cause);
  }
}
