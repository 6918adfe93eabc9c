import type { Cell, Row } from "./api.js";
import {
  cellText,
  compareCells,
  isCut,
  isNull,
  isNumeric,
  previewText,
  readableTime,
} from "./format.js";

/** Rows rendered beyond the visible ones on each side, so fast scrolling shows no gap. */
const OVERSCAN = 12;
/** Rows sampled to size the columns. */
const WIDTH_SAMPLE = 400;
const MIN_CH = 4;
const MAX_CH = 42;

/** Called when a user asks for a cell's full value (click, or Enter on a focused cell). */
export type ShowValue = (column: string, rowNumber: number, text: string) => void;

/** A column's sort: ascending, descending, or none (the answer's own order). */
export type SortDirection = "ascending" | "descending" | "none";

/**
 * A result table that renders only the rows in view (plus a margin) between two spacer rows,
 * so 10,000 or 1,000,000 rows cost the same to show and to scroll. Rows have one fixed
 * height (cells never wrap); the header is sticky; columns get a width from a sample of rows.
 */
export class ResultTable {
  /** The rows in the order shown (sorted, or as the answer had them). */
  private rows: Row[] = [];
  /** The rows as the answer had them. */
  private answerRows: Row[] = [];
  private columns: string[] = [];
  private sortColumn = -1;
  private sortDirection: SortDirection = "none";
  private rowHeight = 0;
  private headHeight = 0;
  private rendered: [number, number] = [-1, -1];
  private frame = 0;
  private table: HTMLTableElement | null = null;
  private body: HTMLTableSectionElement | null = null;
  private readonly resizeObserver: ResizeObserver;

  constructor(
    private readonly container: HTMLElement,
    private readonly showValue: ShowValue,
  ) {
    container.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.resizeObserver = new ResizeObserver(() => this.schedule());
    this.resizeObserver.observe(container);
    container.addEventListener("click", (event) => {
      const sortButton = (event.target as HTMLElement).closest("button.sort");
      if (sortButton !== null) this.toggleSort(Number((sortButton as HTMLElement).dataset.column));
      else this.onActivate(event);
    });
    container.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !(event.target as HTMLElement).closest("button")) {
        this.onActivate(event);
      }
    });
  }

  /** The columns and rows as shown now (sorted, when a header was clicked): what export writes. */
  shown(): { columns: string[]; rows: Row[] } {
    return { columns: this.columns, rows: this.rows };
  }

  /** Marks the rows as not the answer of the statement now in the editor (it failed). */
  setStale(stale: boolean): void {
    this.container.classList.toggle("stale", stale);
    if (stale) this.container.setAttribute("aria-description", "stale: the last statement failed");
    else this.container.removeAttribute("aria-description");
  }

  /**
   * Replaces the table with these rows (columns in this order, repeats kept). Scrolls back to
   * the top unless `keepScroll` (a re-run of the same statement keeps the reader's place, and
   * its sort).
   */
  show(columns: string[], rows: Row[], keepScroll = false): void {
    const sameColumns =
      columns.length === this.columns.length &&
      columns.every((name, index) => name === this.columns[index]);
    if (!keepScroll || !sameColumns) {
      this.sortColumn = -1;
      this.sortDirection = "none";
    }
    this.columns = columns;
    this.answerRows = rows;
    this.rows = this.sorted();
    this.build(keepScroll);
  }

  /** Cycles a column's sort: ascending, descending, then the answer's order again. */
  private toggleSort(column: number): void {
    if (column !== this.sortColumn) {
      this.sortColumn = column;
      this.sortDirection = "ascending";
    } else if (this.sortDirection === "ascending") {
      this.sortDirection = "descending";
    } else {
      this.sortColumn = -1;
      this.sortDirection = "none";
    }
    this.rows = this.sorted();
    this.build(true);
    const button = this.container.querySelector<HTMLElement>(
      `button.sort[data-column="${column}"]`,
    );
    button?.focus({ preventScroll: true });
  }

  /** The answer's rows in the chosen order; ties keep the answer's order (a stable sort). */
  private sorted(): Row[] {
    const column = this.sortColumn;
    if (column < 0 || this.sortDirection === "none") return this.answerRows;
    const sign = this.sortDirection === "ascending" ? 1 : -1;
    return this.answerRows
      .map((row, index) => ({ row, index }))
      .sort((a, b) => sign * compareCells(a.row[column], b.row[column]) || a.index - b.index)
      .map(({ row }) => row);
  }

  private build(keepScroll: boolean): void {
    const { columns, rows } = this;
    const [top, left] = keepScroll ? [this.container.scrollTop, this.container.scrollLeft] : [0, 0];
    this.rendered = [-1, -1];
    this.container.replaceChildren();
    if (columns.length === 0) {
      this.table = null;
      this.body = null;
      const empty = document.createElement("p");
      empty.className = "empty";
      empty.textContent = "No rows (the statement returns no columns).";
      this.container.append(empty);
      return;
    }
    const table = document.createElement("table");
    table.className = "grid";
    table.setAttribute("aria-rowcount", String(rows.length + 1));
    table.setAttribute("aria-colcount", String(columns.length + 1));
    const colgroup = document.createElement("colgroup");
    // Width in characters of the mono font, plus each cell's padding and border.
    const widths = [Math.max(3, String(rows.length).length), ...columnWidths(columns, rows)];
    for (const width of widths) {
      const col = document.createElement("col");
      col.style.width = `calc(${width}ch + 1.2em + 1px)`;
      colgroup.append(col);
    }
    const totalCh = widths.reduce((sum, width) => sum + width, 0);
    table.style.width = `calc(${totalCh}ch + ${widths.length * 1.2}em + ${widths.length}px)`;
    const head = document.createElement("thead");
    const headRow = document.createElement("tr");
    headRow.setAttribute("aria-rowindex", "1");
    const corner = document.createElement("th");
    corner.scope = "col";
    corner.className = "rownum";
    corner.textContent = "#";
    headRow.append(corner);
    columns.forEach((column, index) => {
      const th = document.createElement("th");
      th.scope = "col";
      th.title = `${column} (click to sort)`;
      const sorted = index === this.sortColumn ? this.sortDirection : "none";
      th.setAttribute("aria-sort", sorted);
      // A button in the header: sorting works from the keyboard too.
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.dataset.column = String(index);
      button.textContent = column;
      if (sorted !== "none") {
        const mark = document.createElement("span");
        mark.className = "sort-mark";
        mark.setAttribute("aria-hidden", "true");
        mark.textContent = sorted === "ascending" ? " ▲" : " ▼";
        button.append(mark);
      }
      th.append(button);
      headRow.append(th);
    });
    head.append(headRow);
    const body = document.createElement("tbody");
    table.append(colgroup, head, body);
    this.container.append(table);
    this.table = table;
    if (rows.length === 0) {
      // The header says what the statement would return; the note says there is nothing.
      this.body = null;
      table.append(body);
      const empty = document.createElement("p");
      empty.className = "empty";
      empty.textContent = "No rows.";
      this.container.append(empty);
      return;
    }
    this.body = body;
    this.headHeight = head.getBoundingClientRect().height;
    this.rowHeight = 0;
    this.render();
    this.container.scrollTop = top;
    this.container.scrollLeft = left;
    if (top !== 0) this.render();
  }

  private schedule(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private render(): void {
    const body = this.body;
    if (body === null) return;
    if (this.rowHeight === 0) {
      // Measure one real row once; every row has this height (CSS keeps cells on one line).
      body.replaceChildren(this.rowElement(0));
      this.rowHeight = Math.max(
        1,
        (body.firstElementChild as HTMLElement).getBoundingClientRect().height,
      );
      this.rendered = [-1, -1];
    }
    const total = this.rows.length;
    const viewTop = Math.max(0, this.container.scrollTop - this.headHeight);
    const viewHeight = this.container.clientHeight || 600;
    const first = Math.max(0, Math.floor(viewTop / this.rowHeight) - OVERSCAN);
    const last = Math.min(total, Math.ceil((viewTop + viewHeight) / this.rowHeight) + OVERSCAN);
    const [oldFirst, oldLast] = this.rendered;
    if (first === oldFirst && last === oldLast) return;
    this.rendered = [first, last];
    const top = body.firstElementChild as HTMLTableRowElement | null;
    const bottom = body.lastElementChild as HTMLTableRowElement | null;
    if (
      oldFirst === -1 ||
      last <= oldFirst ||
      first >= oldLast ||
      top === null ||
      bottom === null
    ) {
      const fragment = document.createDocumentFragment();
      fragment.append(spacer(first * this.rowHeight));
      for (let index = first; index < last; index++) fragment.append(this.rowElement(index));
      fragment.append(spacer((total - last) * this.rowHeight));
      body.replaceChildren(fragment);
      return;
    }
    // The ranges overlap (ordinary scrolling): keep the rows still in view, change the edges.
    for (let index = oldFirst; index < first; index++) top.nextElementSibling?.remove();
    for (let index = last; index < oldLast; index++) bottom.previousElementSibling?.remove();
    if (first < oldFirst) top.after(this.rowRange(first, oldFirst));
    if (last > oldLast) bottom.before(this.rowRange(oldLast, last));
    top.style.height = `${first * this.rowHeight}px`;
    bottom.style.height = `${(total - last) * this.rowHeight}px`;
  }

  private rowRange(from: number, to: number): DocumentFragment {
    const fragment = document.createDocumentFragment();
    for (let index = from; index < to; index++) fragment.append(this.rowElement(index));
    return fragment;
  }

  private rowElement(index: number): HTMLTableRowElement {
    const row = this.rows[index] as Row;
    const tr = document.createElement("tr");
    // Stripes by row number, not by position in the DOM, which shifts while scrolling.
    tr.className = index % 2 === 1 ? "row odd" : "row";
    tr.dataset.index = String(index);
    tr.setAttribute("aria-rowindex", String(index + 2));
    const number = document.createElement("td");
    number.className = "rownum";
    number.textContent = String(index + 1);
    tr.append(number);
    this.columns.forEach((column, at) => tr.append(cellElement(column, row[at])));
    return tr;
  }

  private onActivate(event: Event): void {
    const cell = (event.target as HTMLElement).closest("td.cut");
    if (cell === null || this.table === null) return;
    const tr = cell.parentElement as HTMLTableRowElement;
    const rowIndex = Number(tr.dataset.index);
    const columnIndex = (cell as HTMLTableCellElement).cellIndex - 1;
    const column = this.columns[columnIndex];
    const row = this.rows[rowIndex];
    if (column === undefined || row === undefined) return;
    this.showValue(column, rowIndex + 1, cellText(row[columnIndex]));
  }
}

function spacer(height: number): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.className = "spacer";
  tr.setAttribute("aria-hidden", "true");
  tr.style.height = `${height}px`;
  return tr;
}

function cellElement(column: string, value: Cell | undefined): HTMLTableCellElement {
  const td = document.createElement("td");
  if (isNull(value)) {
    td.className = "null";
    td.textContent = "NULL";
    return td;
  }
  const text = cellText(value);
  const time = readableTime(column, value);
  if (time !== null) {
    // A Unix time as a date; the stored number on hover (and in copies and exports).
    td.className = "num time";
    td.textContent = time;
    td.title = text;
    return td;
  }
  td.textContent = previewText(text);
  if (isNumeric(value)) td.classList.add("num");
  if (isCut(text)) {
    td.classList.add("cut");
    td.tabIndex = 0;
    td.title = text.length > 2000 ? `${text.slice(0, 2000)}… (click for the full value)` : text;
  }
  return td;
}

/** A width in characters per column, from the header and a sample of rows. */
function columnWidths(columns: string[], rows: Row[]): number[] {
  const step = Math.max(1, Math.floor(rows.length / WIDTH_SAMPLE));
  return columns.map((column, at) => {
    // The name, and room for the sort mark.
    let widest = column.length + 3;
    for (let index = 0; index < rows.length && widest < MAX_CH; index += step) {
      const value = (rows[index] as Row)[at];
      const shown = isNull(value) ? "NULL" : (readableTime(column, value) ?? cellText(value));
      widest = Math.max(widest, shown.length);
    }
    return Math.min(MAX_CH, Math.max(MIN_CH, widest));
  });
}
