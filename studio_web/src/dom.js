// DOM helpers for the studio page: elements by id, which view is shown, badges, table cells, buttons, times.

export const $ = (id) => document.getElementById(id);

export function show(view) {
  for (const id of ["signin", "agents-view", "list-view", "deleted-view", "editor-view", "vocabulary-view"]) {
    $(id).hidden = id !== view;
  }
}

export function badge(text, kind) {
  const span = document.createElement("span");
  span.className = `badge ${kind}`;
  span.textContent = text;
  return span;
}

export function cell(row, content) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  return td;
}

export function button(text, onClick) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = text;
  element.addEventListener("click", onClick);
  return element;
}

// A time the API sends (UTC, ISO 8601) as the page shows it, saying it is UTC; `seconds` keeps
// them. A table's column says UTC in its heading instead (`inColumn`), so its cells stay narrow.
export function stamp(text, seconds = false, inColumn = false) {
  return text ? `${text.replace("T", " ").replace("Z", "").slice(0, seconds ? 19 : 16)}${inColumn ? "" : " UTC"}` : "";
}
