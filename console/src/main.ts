/** The console's entry: the page switcher, and each page started once. */
import "./style.css";
import { project } from "./api";
import { startExplorer } from "./explorer";
import { startIndexes } from "./indexes";
import { isCluster, startPartitions } from "./partitions";
import { byTestId } from "./dom";
import { startPlayground } from "./playground";
import { startTreePlayground } from "./tree";

async function start(): Promise<void> {
  startPlayground(await project());
  startTreePlayground();
  const shown: Record<string, { show(): void } | undefined> = { explorer: startExplorer(), indexes: startIndexes(), "partitions-page": startPartitions() };
  // The partition page is a cluster's only (`silk serve --cluster`).
  byTestId<HTMLButtonElement>("tab-partitions").hidden = !(await isCluster());
  for (const button of document.querySelectorAll<HTMLButtonElement>("nav [data-page]")) {
    button.addEventListener("click", () => {
      for (const page of document.querySelectorAll<HTMLElement>(".page")) page.hidden = page.id !== button.dataset.page;
      for (const other of document.querySelectorAll<HTMLButtonElement>("nav [data-page]")) other.classList.toggle("active", other === button);
      shown[button.dataset.page ?? ""]?.show();
    });
  }
  document.querySelector<HTMLButtonElement>('nav [data-page="playground"]')?.classList.add("active");
  document.body.dataset.ready = "true";
}

void start();
