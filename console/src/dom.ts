/** Small DOM helpers shared by the pages. */

/** The element of the page with `data-testid` equal to `id` (every element the pages drive is named so). */
export function byTestId<T extends HTMLElement>(id: string): T {
  const element = document.querySelector<T>(`[data-testid="${id}"]`);
  if (element === null) throw new Error(`the page has no element ${id}`);
  return element;
}

/** A new element with its text and class. */
export function element<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = text;
  if (className !== undefined) made.className = className;
  return made;
}

/** How a value reads in a table cell: strings as they are, everything else as JSON. */
export function cellText(value: unknown): string {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A table of rows (objects) with one column per key any row has, in the order first seen. */
export function rowsTable(rows: readonly Readonly<Record<string, unknown>>[]): HTMLTableElement {
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  const table = element("table");
  const head = table.createTHead().insertRow();
  for (const column of columns) head.appendChild(element("th", column));
  const body = table.createTBody();
  for (const row of rows) {
    const line = body.insertRow();
    for (const column of columns) line.insertCell().textContent = cellText(row[column]);
  }
  return table;
}

export function isRecordLike(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * An answer as tables, one per returned name (a bare value, one without names): a list of records is a table with a
 * column per property, one record a table of one row, anything else its text.
 */
export function showTables(container: HTMLElement, answer: unknown): void {
  container.replaceChildren();
  const sections: [string | undefined, unknown][] = isRecordLike(answer) ? Object.entries(answer) : [[undefined, answer]];
  for (const [name, value] of sections) {
    if (name !== undefined) container.appendChild(element("h3", name));
    if (Array.isArray(value) && value.every(isRecordLike)) container.appendChild(value.length === 0 ? element("p", "no rows", "hint") : rowsTable(value));
    else if (isRecordLike(value)) container.appendChild(rowsTable([value]));
    else container.appendChild(element("p", cellText(value), "value"));
  }
}
