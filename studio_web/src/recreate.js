// Creating a concept under a deleted concept's name: the API answers 409 name_deleted and nothing is
// written; the editor says who deleted it and when, and offers to restore the deleted one (its
// history goes on) or to create the new text knowingly (POST /concepts?new_history=true).
import { $, stamp } from "./dom.js";
import { mayDiscard, openConcept, save } from "./editor.js";
import { api } from "./session.js";
import { fail, say } from "./status.js";
import { visit } from "./url.js";

export function showDeletedName(body) {
  $("deleted-name-name").textContent = body.name;
  $("deleted-name-who").textContent = `Deleted ${stamp(body.deleted_at)}${body.deleted_by ? ` by ${body.deleted_by}` : ""}.`;
  $("deleted-name").dataset.name = body.name;
  $("deleted-name").hidden = false;
  $("deleted-name-title").focus();
}

export function hideDeletedName() {
  $("deleted-name").hidden = true;
}

async function restoreDeleted() {
  const name = $("deleted-name").dataset.name;
  if (!mayDiscard(`Restoring ${name}`)) return;
  try {
    await api("POST", `/deleted/${encodeURIComponent(name)}/restore`);
  } catch (error) {
    fail(`Not restored: ${name} is still deleted`, error, restoreDeleted);
    return;
  }
  if (await openConcept(name)) {
    visit(name);
    say(`${name} is back, with its history. Your new text was not saved.`);
  }
}

export function wireRecreate() {
  $("deleted-name-restore").addEventListener("click", restoreDeleted);
  $("deleted-name-new").addEventListener("click", () => save(undefined, { newHistory: true }));
}
