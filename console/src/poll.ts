/** Reading a page's figures again while the page is shown (the index and partition pages). */

/** The pages polling now, each with its timer: showing a page again does not start a second poll. */
const polling = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();

/**
 * Runs `refresh` now, then `everyMs` after each run ends, for as long as `page` is shown (not `hidden`) and `refresh`
 * answers true (there is more to see: the index page polls while a build runs): a page switched away from stops
 * reading, and one shown again starts once more.
 */
export function pollWhileShown(page: HTMLElement, refresh: () => Promise<boolean>, everyMs: number): void {
  if (polling.has(page)) return;
  const run = async (): Promise<void> => {
    const more = await refresh();
    if (page.hidden || !more) {
      polling.delete(page);
      return;
    }
    polling.set(page, setTimeout(() => void run(), everyMs));
  };
  polling.set(page, setTimeout(() => void run(), 0));
}
