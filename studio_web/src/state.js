// What a studio page knows between two events, in one place: every module reads and writes its
// part here (no other module keeps a module-level `let`), and `calls` holds the callbacks by which
// a module calls one above it. Each page is its own bundle, so each has its own copy: the Knowledge
// page uses the shared parts and its own, the Facts page the shared parts and `facts`.
// What the page shows comes from the API each time; this holds only what ties one event to the next.

export const state = {
  // ---------------------------------------------------------------- both pages
  config: { apiBase: "/api", signIn: null },  // config.json, over these defaults (session.js)
  // This page's sign-in (session.js): the key its pending request waits under, and its callback
  // address (null: the config's redirectUri, the Knowledge page; "facts": the Facts page beside it).
  session: { pendingKey: null, callbackPage: null },
  leavingOnPurpose: false,  // the page itself navigates away (sign-in): the draft is kept, nobody is asked
  // This tab's own API writes (session.js): begun so far, and still waiting for their answer. The list's
  // stale cue counts none of them (stale.js drops a look that overlapped one).
  writes: { begun: 0, open: 0 },
  status: {
    retry: null,  // what "Try again" runs
    spoken: 0,  // what the operator's own actions have said: a background refresh never talks over it
  },

  // ---------------------------------------------------------------- the Knowledge page
  editor: {
    view: null,  // the CodeMirror view, made once
    current: null,  // { name, etag } of the version in the editor; name null for a new concept
    savedText: null,  // the text as loaded or last saved: anything else in the editor is unsaved work
    staleViews: [],  // the stale save's two diffs
  },
  resolution: {
    editor: null,  // { text(), replace(markdown), save(), diff(parent, label, before, after) } from the editor
    before: null,  // the text as it was before the resolution under review
    review: null,  // the review's diff view
    shown: "",  // what the explanation shows, to redraw it only when the section's reading changes
  },
  list: {
    concepts: [],  // the rows shown
    offset: 0,  // the first row shown, in the server's order (pages.js: the page)
    nextCursor: null,
    total: 0,
    sortKey: "written_at",  // last written first: what the engine just learned is on top
    sortDescending: true,
    sortChosen: false,  // with a query, relevance orders the list until the operator picks a column
    // The filters the list on screen was loaded with: a failed load puts the controls back to them.
    shownFilters: { fresh: false, conflict: false, related: false, expired: false, notStarted: false, stale: false,
      retired: false, type: "", q: "", sort: "written_at", desc: true },
    selected: new Set(),  // the names of the rows checked for a bulk action (select.js)
    undoDelete: null,  // the names the last bulk delete deleted, while Undo is offered
    movePlan: null,  // the names a bulk move to shared was counted for, while its confirmation is offered
    listScroll: 0,  // where the list was scrolled when a concept was opened from it
    sharedRecalled: undefined,  // the shared concepts this agent recalls, as its last list said (undefined: no list yet)
    newestShown: null,  // the last write the rows shown include, as the watch compares it
    watching: null,  // the watch's interval
    listings: 0,  // listings begun: a look answered while one ran (or after it began) is dropped
    listing: 0,  // listings under way
    currentAt: null,  // since when the list on screen is known to be current
    catchingUp: null,  // the timer that asks again while the service catches up
  },
  // "N changes since you opened it — show" (stale.js): when the rows shown were listed (their `as_of`), its
  // look's timer, and whether a look is under way.
  behind: { since: null, timer: null, looking: false },
  review: {
    listedAt: null,  // when the list shown was listed: "Mark all as seen" stores it
    since: null,  // when this operator last marked all as seen
    newCount: 0,
    undoable: null,  // the seen_at the last mark stored, which "Undo" takes back
  },
  // The history shown, its next page, the open diff; the texts of the versions read (concept + id -> markdown:
  // a version never changes once written); `loading`: the concept whose first page is being asked for.
  versions: { diff: null, shown: [], next: null, texts: new Map(), loading: null },
  vocabulary: { etag: null, yaml: null },  // the vocabulary as loaded or last saved
  // The learned words page: the rows shown, the next page's cursor, the words chosen (concept + word -> row).
  words: { rows: [], next: null, selected: new Map() },
  import: { chosen: null, busy: false },  // the files chosen ([{ name, text }] as sent); writing under way

  // ---------------------------------------------------------------- the Facts page
  facts: {
    shown: { pending: [], stale: [], recent: [] },  // each list's rows
    next: { pending: null, stale: null, recent: null },  // each list's next page
    customer: null,  // the customer whose memory is open
    keepPersonalData: null,  // "Save it anyway": the save again, with the personal data confirmed
    filter: { name: "", customer: "" },  // pending shown for one fact name and/or one customer ("": all)
    selected: new Map(),  // pending cards chosen for one action (id -> proposal), only ones on screen
    deciding: false,  // a bulk action under way: its buttons stay disabled
  },
};

// What a module calls in one above it (or in its page) is registered here by the page's entry
// (main.js, facts.js) when it starts, so no module imports one that imports it.
export const calls = {
  keepDraft: () => false,  // session.js, signing in again: the editor keeps unsaved work (true when it did)
  signInFailed: null,  // session.js: a return from the sign-in page that did not sign in, said (message)
  refreshList: null,  // review.js: the list again in place, after the review state changed
  counted: null,  // review.js: what the list says it shows ("12 concepts")
  loadList: null,  // pages.js: the list from another row (list.js)
  showShareButtons: null,  // editor.js: share.js's buttons for the concept now open (name; null: a new one)
  showDeletedName: null,  // editor.js: recreate.js's offer, when a save hit a deleted concept's name
  hideDeletedName: null,
};

export function register(callbacks) {
  for (const name of Object.keys(callbacks)) {
    if (!(name in calls)) throw new Error(`state.js has no call named ${name}`);
  }
  Object.assign(calls, callbacks);
}
