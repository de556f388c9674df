// DOM helpers for both studio pages: elements by id, which view is shown, elements, badges, table
// cells, buttons, times.

export const $ = (id) => document.getElementById(id);

// One view at a time: the page's views are the elements its HTML marks `data-view`.
export function show(view) {
  for (const element of document.querySelectorAll("[data-view]")) element.hidden = element.id !== view;
}

// An element with attributes (`class`, `text` for its text, any other as is) and children (nodes or text).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
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

export function button(text, onClick, className = "") {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = text;
  if (className) element.className = className;
  element.addEventListener("click", onClick);
  return element;
}

// A time the API sends (UTC, ISO 8601) as the page shows it, saying it is UTC; `seconds` keeps
// them. A table's column says UTC in its heading instead (`inColumn`), so its cells stay narrow.
export function stamp(text, seconds = false, inColumn = false) {
  return text ? `${text.replace("T", " ").replace("Z", "").slice(0, seconds ? 19 : 16)}${inColumn ? "" : " UTC"}` : "";
}
