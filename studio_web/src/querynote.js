// What a search read of the query, under the filters: the words past the eight read, and, when
// nothing matched, each word no concept holds (every word must match) with a button that searches
// again without it.
import { $ } from "./dom.js";

export function showQueryNote(page, search) {
  const note = $("query-note");
  const query = page.query;
  note.replaceChildren();
  if (query && query.ignored.length) {
    note.append(`Only the first ${query.read.length} words are read: “${query.ignored.join(" ")}” `
      + `${query.ignored.length === 1 ? "was" : "were"} not looked for. `);
  }
  if (query && query.unmatched.length) {
    note.append("Every word must match, and no concept holds ");
    query.unmatched.forEach((word, index) => {
      const drop = document.createElement("button");
      drop.type = "button";
      drop.textContent = `Search without “${word}”`;
      drop.addEventListener("click", () => {
        const field = $("filter-q");
        field.value = field.value.split(/\s+/).filter((part) => part !== word).join(" ");
        search();
        field.focus();
      });
      note.append(`${index ? ", " : ""}“${word}” `, drop);
    });
    note.append(".");
  }
  note.hidden = !note.childNodes.length;
}
