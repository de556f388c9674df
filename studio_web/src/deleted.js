// Deleting the open concept, and the deleted concepts: their list, a preview of what each held, and undelete.
import { $, button, cell, show, stamp } from "./dom.js";
import { forgetCurrent } from "./editor.js";
import { loadList } from "./list.js";
import { api } from "./session.js";
import { state } from "./state.js";
import { fail, say } from "./status.js";
import { visit } from "./url.js";

export async function deleteCurrent() {
  if (!confirm(`Delete ${state.editor.current.name}? It can be restored from "Deleted concepts".`)) return;
  await removeCurrent();
}

async function removeCurrent() {
  try {
    await api("DELETE", `/concepts/${encodeURIComponent(state.editor.current.name)}`);
  } catch (error) {
    fail(`Not deleted: ${state.editor.current.name} is still there`, error, removeCurrent);
    return;
  }
  forgetCurrent();
  visit(null);
  const deleted = "Deleted. Restore it from \"Deleted concepts\".";
  if (!(await loadList())) {
    // Beside the failure the list left on screen, which stays (not over what else the list said).
    if (!$("problem").hidden) $("status").textContent = deleted;
    return;
  }
  say(deleted);
}

export async function showDeleted() {
  let deleted;
  try {
    deleted = (await api("GET", "/deleted")).deleted;
  } catch (error) {
    fail("Could not load the deleted concepts", error, showDeleted);
    return;
  }
  const body = $("deleted").tBodies[0];
  body.replaceChildren();
  for (const item of deleted) {
    const row = body.insertRow();
    row.dataset.name = item.name;
    cell(row, item.name);
    cell(row, stamp(item.deleted_at, true));
    cell(row, item.deleted_by || "unknown");
    const actions = cell(row, "");
    const undelete = async () => {
      try {
        await api("POST", `/deleted/${encodeURIComponent(item.name)}/restore`);
      } catch (error) {
        fail(`Not restored: ${item.name} is still deleted`, error, undelete);
        return;
      }
      await loadList();
      say(`${item.name} is back.`);
    };
    const preview = button("Preview", () => previewDeleted(item.name));
    preview.setAttribute("aria-label", `Preview ${item.name}`);
    const restore = button("Restore", undelete);
    restore.setAttribute("aria-label", `Restore ${item.name}`);
    actions.append(preview, " ", restore);
  }
  $("deleted-preview").hidden = true;
  $("deleted-empty").hidden = deleted.length > 0;
  show("deleted-view");
  $("deleted-title").focus();
  say("");
}

// What a deleted concept held, and who deleted it when: read before deciding to restore it.
async function previewDeleted(name) {
  let item;
  try {
    item = await api("GET", `/deleted/${encodeURIComponent(name)}`);
  } catch (error) {
    fail(`Could not show what ${name} held`, error, () => previewDeleted(name));
    return;
  }
  say("");
  $("deleted-preview-title").textContent = item.name;
  $("deleted-preview-who").textContent =
    `Deleted by ${item.deleted_by || "someone unknown"} on ${stamp(item.deleted_at, true)}. It held:`;
  $("deleted-preview-text").textContent = item.markdown;
  $("deleted-preview").hidden = false;
  $("deleted-preview-title").focus();
}
