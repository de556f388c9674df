// The list's density: compact rows (one line each) or the roomy default, remembered in this browser.
import { $ } from "./dom.js";

const KEY = "knowledge-studio-compact";

function apply(compact) {
  $("list-view").classList.toggle("compact", compact);
  $("compact").checked = compact;
}

export function wireDensity() {
  apply(localStorage.getItem(KEY) === "1");
  $("compact").addEventListener("change", () => {
    localStorage.setItem(KEY, $("compact").checked ? "1" : "0");
    apply($("compact").checked);
  });
}
