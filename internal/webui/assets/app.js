// agentstate's time-travel page. Every piece of data reaches the DOM through
// textContent or attributes set by code: never as HTML.
"use strict";

const main = document.getElementById("main");

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c == null) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function short(cid) { return cid ? cid.slice(0, 15) : ""; }
function cidLink(agent, cid) {
  return el("a", { href: "#/a/" + encodeURIComponent(agent) + "/c/" + encodeURIComponent(cid), class: "cid", title: cid, text: short(cid) });
}
function when(t) { return new Date(t * 1000).toISOString().replace("T", " ").replace(".000Z", " UTC"); }

async function api(path) {
  const r = await fetch("/api/" + path, { credentials: "same-origin" });
  const body = await r.json().catch(() => ({ error: "unreadable answer (" + r.status + ")" }));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}

// show makes nodes the page's content (null ones left out).
function show(...nodes) { rendered++; main.replaceChildren(...nodes.filter(n => n != null)); }

function showError(err) {
  show(el("p", { class: "error", id: "error", text: String(err.message || err) }));
}

async function viewAgents() {
  const agents = await api("agents");
  const rows = agents.map(a => el("tr", {},
    el("td", {}, el("a", { href: "#/a/" + encodeURIComponent(a.name), class: "agent", text: a.name })),
    el("td", {}, cidLink(a.name, a.head)),
    el("td", { text: a.message }),
    el("td", { class: "mono", text: a.bundleHash.slice(0, 18) + "…", title: a.bundleHash })));
  show(el("h1", { text: "Agents" }),
    el("div", { class: "scroll" }, el("table", { id: "agents" }, el("tr", {}, el("th", { text: "agent" }), el("th", { text: "HEAD" }), el("th", { text: "last message" }), el("th", { text: "bundle hash" })), ...rows)));
}

// kept is a commit's parents less those a forget cut: the lines the log
// goes on along.
function kept(c) { return c.parents.filter(p => !(c.cut || []).includes(p)); }

// cutText is what 'agentstate log' prints where a forget cut the history.
function cutText(f) {
  if (!f) return "~~ history cut here by forget ~~";
  return "~~ history cut here by forget at " + when(f.time) + " (" + f.policy + "); " + f.forgottenOps +
    " older operations and " + f.forgottenCommits + " commits forgotten in all ~~";
}

// lanes assigns each commit of a log (newest first) a column, and returns
// for every commit its lane and the lanes of its parents' lines. Only a
// parent in the list keeps a lane: a filtered list (a search, a key's
// history) or a page's last rows would otherwise open a lane for every
// parent not shown, and push the rows sideways.
function lanes(commits) {
  const active = []; // lane -> cid expected next in that lane
  const out = [];
  const shown = new Set(commits.map(c => c.cid));
  for (const c of commits) {
    let lane = active.indexOf(c.cid);
    if (lane < 0) { lane = active.indexOf(null); if (lane < 0) { lane = active.length; active.push(null); } }
    for (let i = 0; i < active.length; i++) if (i !== lane && active[i] === c.cid) active[i] = null;
    const parentLanes = [];
    const parents = kept(c).filter(p => shown.has(p));
    parents.forEach((p, i) => {
      if (i === 0) { active[lane] = p; parentLanes.push(lane); return; }
      let l = active.indexOf(p);
      if (l < 0) { l = active.indexOf(null); if (l < 0) { l = active.length; active.push(null); } active[l] = p; }
      parentLanes.push(l);
    });
    if (parents.length === 0) active[lane] = null;
    out.push({ lane, parentLanes, width: active.length });
  }
  return out;
}

function graphCell(info, isHead, isUndone) {
  const W = 14, H = 28, n = Math.max(info.width, 1);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", String(n * W + 6)); svg.setAttribute("height", String(H));
  const x = l => 7 + l * W;
  for (const pl of info.parentLanes) {
    const line = document.createElementNS(ns, "line");
    line.setAttribute("x1", x(info.lane)); line.setAttribute("y1", H / 2);
    line.setAttribute("x2", x(pl)); line.setAttribute("y2", H);
    line.setAttribute("stroke", pl === info.lane ? "#8a94a6" : "#7a4fbf"); line.setAttribute("stroke-width", "2");
    svg.append(line);
  }
  const top = document.createElementNS(ns, "line");
  top.setAttribute("x1", x(info.lane)); top.setAttribute("y1", 0); top.setAttribute("x2", x(info.lane)); top.setAttribute("y2", H / 2);
  top.setAttribute("stroke", "#8a94a6"); top.setAttribute("stroke-width", "2");
  svg.append(top);
  const dot = document.createElementNS(ns, "circle");
  dot.setAttribute("cx", x(info.lane)); dot.setAttribute("cy", H / 2); dot.setAttribute("r", "5");
  dot.setAttribute("fill", isHead ? "#1f5fbf" : isUndone ? "#bbb" : "#fff"); dot.setAttribute("stroke", "#1d2330"); dot.setAttribute("stroke-width", "1.5");
  svg.append(dot);
  return svg;
}

const enc = encodeURIComponent;
function agentHref(agent, rest) { return "#/a/" + enc(agent) + (rest || ""); }
function headerRow(...names) { return el("tr", { class: "header" }, ...names.map(n => el("th", { text: n }))); }
function qs(params) {
  return Object.entries(params).filter(([, v]) => v !== "" && v != null).map(([k, v]) => enc(k) + "=" + enc(v)).join("&");
}

// taskOf is the task (ID and attempt) a commit's metadata names, or null.
function taskOf(c) {
  const m = c.metadata || {};
  return m.task ? { id: m.task, attempt: m.attempt || "" } : null;
}

// taskGroups folds each run of two or more neighbouring commits of one
// task into a row for the task (its name, its commits, their newest
// message), which opens to show them and closes again; a commit of no task,
// or alone in its task on the page, keeps its own row. rows are each
// commit's rows (a cut mark after it included), info their lanes.
function taskGroups(agent, commits, rows, info) {
  const out = [];
  for (let i = 0; i < commits.length;) {
    const t = taskOf(commits[i]);
    let j = i + 1;
    while (t && j < commits.length && (taskOf(commits[j]) || {}).id === t.id && taskOf(commits[j]).attempt === t.attempt && rows[j - 1].length === 1) j++;
    if (j - i < 2) { out.push(...rows[i]); i++; continue; }
    const n = j - i, members = rows.slice(i, j).flat();
    members.forEach(r => { r.hidden = true; r.classList.add("in-task"); });
    const toggle = el("button", { type: "button", class: "task-toggle", "aria-expanded": "false", title: "show the task's commits", text: "▸ " + n + " commits" });
    const lane = el("td", { class: "lane" }, graphCell({ lane: info[i].lane, parentLanes: [info[i].lane], width: info[i].width }, false, false));
    const group = el("tr", { class: "task-group", "data-task": taskName(t) },
      el("td", { class: "pick" }), lane, el("td", {}, toggle),
      el("td", { class: "msg-cell" }, "task ", taskLink(agent, t), " ", el("span", { class: "meta", text: commits[i].message }),
        members.some(r => r.querySelector(".head")) ? el("span", { class: "head", text: "HEAD" }) : null),
      el("td", { class: "meta", text: "task=" + taskName(t) }), el("td", { class: "meta when", text: when(commits[i].time) }));
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = (open ? "▾ " : "▸ ") + n + " commits";
      members.forEach(r => { r.hidden = !open; });
      group.classList.toggle("open", open);
    });
    out.push(group, ...members);
    i = j;
  }
  return out;
}

// historyTable renders a page of the log as the graph, with a checkbox a
// row to pick two commits to compare.
function historyTable(agent, log, undone) {
  const info = lanes(log.commits);
  const rows = log.commits.map((c, i) => { // each commit's rows: its own, and a cut mark
    const isHead = c.cid === log.head, isUndone = undone.has(c.cid);
    const msg = el("td", { class: "msg-cell" }, el("a", { href: agentHref(agent, "/c/" + enc(c.cid)), class: "msg", text: c.message }),
      isHead ? el("span", { class: "head", text: "HEAD" }) : null,
      ...((log.decorations || {})[c.cid] || {}).tags?.map(t => el("span", { class: "tag", title: "tag", text: t })) || [],
      ...((log.decorations || {})[c.cid] || {}).agents?.map(a => el("a", { class: "other-head", href: agentHref(a), title: a + "'s HEAD", text: a })) || [],
      c.parents.length > 1 ? el("span", { class: "merge", text: "merge" }) : null,
      isUndone ? el("span", { class: "undone", text: "undone" }) : null);
    const meta = Object.entries(c.metadata || {}).filter(([k]) => ["task", "model", "op", "source"].includes(k)).map(([k, v]) => k + "=" + v).join("  ");
    const row = el("tr", { class: "commit", "data-cid": c.cid, "data-parents": String(c.parents.length) },
      el("td", { class: "pick" }, el("input", { type: "checkbox", class: "pick", value: c.cid, title: "pick two to compare", "aria-label": "pick to compare" })),
      el("td", { class: "lane" }, graphCell(info[i], isHead, isUndone)),
      el("td", {}, cidLink(agent, c.cid)), msg, el("td", { class: "meta", text: meta }), el("td", { class: "meta when", text: when(c.time) }));
    if (!c.cut || c.cut.length === 0) return [row];
    return [row, el("tr", { class: "cut", "data-cid": c.cid }, el("td", { colspan: "6", text: cutText(log.forgotten) }))];
  });
  const table = el("table", { class: "graph", id: "history" }, headerRow("", "", "commit", "message", "task · model · op", "time"), ...taskGroups(agent, log.commits, rows, info));
  const compare = el("button", { id: "compare-picked", type: "button", disabled: "", text: "compare the two picked" });
  table.addEventListener("change", () => {
    const picked = [...table.querySelectorAll("input.pick:checked")];
    if (picked.length > 2) picked.filter(p => p !== document.activeElement).slice(0, picked.length - 2).forEach(p => { p.checked = false; });
    compare.disabled = table.querySelectorAll("input.pick:checked").length !== 2;
  });
  compare.addEventListener("click", () => {
    // The list is newest first: the older is "from".
    const picked = [...table.querySelectorAll("input.pick:checked")].map(p => p.value);
    if (picked.length === 2) location.hash = agentHref(agent, "/compare?" + qs({ from: picked[1], to: picked[0] }));
  });
  return [el("div", { class: "scroll" }, table), el("p", { class: "actions" }, compare)];
}

// searchForm filters the history by text (message, task, model) and by
// key (a key or a prefix); it navigates, so every search is a link.
function searchForm(agent, f) {
  const grep = el("input", { id: "grep", type: "search", name: "grep", placeholder: "message, task or model", value: f.grep || "" });
  const key = el("input", { id: "key-filter", type: "search", name: "prefix", placeholder: "key or key prefix", value: f.prefix || f.path || "" });
  const form = el("form", { id: "search", class: "search", role: "search" },
    el("label", {}, "search ", grep), el("label", {}, "changed key ", key), el("button", { type: "submit", text: "filter" }));
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    location.hash = agentHref(agent, "/history?" + qs({ grep: grep.value, prefix: key.value }));
  });
  return form;
}

function logQuery(agent, f) {
  return "log?" + qs({ agent, limit: 200, cursor: f.cursor, grep: f.grep, prefix: f.prefix, path: f.path, rev: f.rev });
}

// pageNav: "newest" back to the first page, "older" on from the cursor.
function pageNav(id, newest, older, text) {
  return el("p", { class: "meta pager", id },
    newest ? el("a", { class: "newest", href: newest, text: "« newest" }) : null, newest ? " · " : null,
    text, older ? " · " : null, older ? el("a", { class: "older", href: older, text: "older »" }) : null);
}

// viewHistory is one page of the history (filtered as f says), with
// "older" going on from the page's cursor.
async function viewHistory(agent, f) {
  const [log, ops] = await Promise.all([api(logQuery(agent, f)), api("oplog?" + qs({ agent, limit: 1000 }))]);
  const undone = new Set(ops.filter(o => o.undone).map(o => o.new));
  const filters = { grep: f.grep, prefix: f.prefix, path: f.path, rev: f.rev };
  const filtered = f.grep || f.prefix || f.path;
  const what = (log.commits.length ? log.commits.length + " commits" : "no commits") +
    (filtered ? " matching, of " + log.scanned + " searched" : "") + (f.cursor ? " (an older page)" : "");
  const nav = pageNav("history-nav", f.cursor ? agentHref(agent, "/history?" + qs(filters)) : null,
    log.next ? agentHref(agent, "/history?" + qs({ ...filters, cursor: log.next })) : null, what);
  show(el("h1", {}, el("a", { href: agentHref(agent), text: agent }), " / history" + (f.path ? " of " : ""), f.path ? el("span", { class: "key", text: f.path }) : null),
    searchForm(agent, f), nav, ...historyTable(agent, log, undone), nav.cloneNode(true));
}

function opsTable(agent, ops) {
  return el("div", { class: "scroll" }, el("table", { id: "oplog" }, headerRow("seq", "operation", "from", "to", "task · note", "time"),
    ...ops.map(o => el("tr", { class: o.undone ? "op undone-op" : "op" },
      el("td", { text: String(o.seq) }), el("td", { text: o.op + (o.undone ? " (undone)" : "") }),
      el("td", {}, o.old ? cidLink(agent, o.old) : "—"), el("td", {}, cidLink(agent, o.new)),
      el("td", { class: "meta", text: (o.task ? "task=" + o.task + " " : "") + (o.note || "") }), el("td", { class: "meta when", text: when(o.time) })))));
}

// viewOps is a page of the operation log, older from a seq.
async function viewOps(agent, f) {
  const n = 100, before = parseInt(f.before, 10) || 0;
  const ops = await api("oplog?" + qs({ agent, limit: n + 1, before: before || "" }));
  const shown = ops.slice(0, n);
  const nav = pageNav("ops-nav", before ? agentHref(agent, "/ops") : null,
    ops.length > n ? agentHref(agent, "/ops?" + qs({ before: shown[shown.length - 1].seq })) : null,
    shown.length ? "operations " + shown[0].seq + "–" + shown[shown.length - 1].seq : "no operations");
  show(el("h1", {}, el("a", { href: agentHref(agent), text: agent }), " / operation log"), nav, opsTable(agent, shown));
}

function receiptsTable(agent, page) {
  if (!page.receipts.length) return el("p", { id: "no-receipts", text: "No receipts." });
  return el("div", { class: "scroll" }, el("table", { id: "receipts" }, headerRow("#", "task", "commit", "verification"),
    ...page.receipts.slice().reverse().map(r => el("tr", { class: "receipt" },
      el("td", { text: String(r.n) }), el("td", { text: r.receipt ? r.receipt.task : "(unreadable)" }),
      el("td", {}, r.receipt ? cidLink(agent, r.receipt.commit) : ""),
      el("td", { class: r.verified ? "ok" : "bad", text: r.verified ? ("verified" + (r.note ? " (" + r.note + ")" : "")) : ("FAILED: " + (r.error || "")) })))));
}

// receiptsNav: newest first; "older" is the page before the first shown.
function receiptsNav(agent, page, n) {
  const first = page.from, last = page.from + page.receipts.length - 1;
  return pageNav("receipts-nav", last < page.total ? agentHref(agent, "/receipts") : null,
    first > 1 ? agentHref(agent, "/receipts?" + qs({ from: Math.max(1, first - n) })) : null,
    page.receipts.length ? "receipts " + last + "–" + first + " of " + page.total + " (each verified as shown)" : "");
}

// viewReceipts is a page of the receipt tape, verified page by page.
async function viewReceipts(agent, f) {
  const n = 50;
  const page = await api("receipts?" + qs({ agent, limit: n, from: parseInt(f.from, 10) || "" }));
  show(el("h1", {}, el("a", { href: agentHref(agent), text: agent }), " / receipts"), receiptsNav(agent, page, n), receiptsTable(agent, page));
}

// rendered counts the views rendered: a late answer for an older one is
// dropped.
let rendered = 0;

async function viewAgent(agent) {
  // The tasks come apart: finding 20 tasks can walk a long history that
  // has few, and the history is not kept waiting for them.
  const tasksAnswer = api("tasks?agent=" + enc(agent) + "&limit=20");
  tasksAnswer.catch(() => {});
  const [log, ops, receipts, snaps] = await Promise.all([
    api(logQuery(agent, {})),
    api("oplog?" + qs({ agent, limit: 21 })),
    api("receipts?" + qs({ agent, limit: 20 })),
    api("snapshots?agent=" + enc(agent))]);
  const tasksBox = el("div", { id: "tasks-box" }, el("p", { class: "meta", text: "Finding tasks…" }));
  const undone = new Set(ops.filter(o => o.undone).map(o => o.new));
  const snRows = snaps.map(s => el("tr", { class: "snapshot" },
    el("td", { text: s.op }), el("td", { class: "mono", text: s.blobId || "" }), el("td", {}, s.commit ? cidLink(agent, s.commit) : ""),
    el("td", { text: s.endEpoch ? "until epoch " + s.endEpoch : "" }), el("td", { text: String(s.size || "") }),
    el("td", { class: s.error ? "bad" : "", text: s.error || when(s.time) })));
  const shownOps = ops.slice(0, 20);
  show(el("h1", { text: agent }),
    el("h2", { text: "Tasks" }), tasksBox,
    el("h2", { text: "History" }), searchForm(agent, {}),
    pageNav("history-nav", null, log.next ? agentHref(agent, "/history?" + qs({ cursor: log.next })) : null, "the newest " + log.commits.length + " commits"),
    ...historyTable(agent, log, undone),
    el("h2", { text: "Operation log" }), opsTable(agent, shownOps),
    pageNav("ops-nav", null, ops.length > 20 ? agentHref(agent, "/ops?" + qs({ before: shownOps[shownOps.length - 1].seq })) : null, "the newest " + shownOps.length + " operations"),
    el("h2", { text: "Receipts" }), receiptsNav(agent, receipts, 50), receiptsTable(agent, receipts),
    el("h2", { text: "Snapshots" }), snRows.length ? el("div", { class: "scroll" }, el("table", { id: "snapshots" }, headerRow("operation", "blob", "commit", "expiry", "size", "time or failure"), ...snRows)) : el("p", { text: "No snapshots." }));
  const view = rendered;
  tasksAnswer.then(tasks => {
    if (view !== rendered) return;
    tasksBox.replaceChildren(el("div", { class: "scroll" }, tasksTable(agent, tasks)),
      tasks.more ? el("p", {}, el("a", { id: "all-tasks", href: agentHref(agent, "/tasks/20"), text: "older tasks…" })) : "");
  }, err => { if (view === rendered) tasksBox.replaceChildren(el("p", { class: "error", text: String(err.message || err) })); });
}

function patchView(patch) {
  const pre = el("pre", { class: "diff" });
  for (const line of patch.split("\n")) {
    if (line === "") continue;
    const cls = line.startsWith("+++") || line.startsWith("---") ? "ctx" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "ctx";
    pre.append(el("span", { class: cls, text: line }));
  }
  return pre;
}

// cellText renders a SQLite cell as the read model's JSON gives it: NULL,
// a number, text, or a blob ({"base64"}); long values are cut.
function cellText(c) {
  let s;
  if (c === null || c === undefined) s = "NULL";
  else if (typeof c === "object" && c.base64 !== undefined) s = "blob, " + Math.floor(c.base64.length * 3 / 4) + " bytes";
  else s = String(c);
  return s.length > 200 ? s.slice(0, 200) + "… (" + s.length + " characters)" : s;
}

// rowsView renders a SQLite value's change by table: schema changes, then
// one table per changed table, a row per inserted, deleted or updated row
// (an update shows the changed columns' old and new values).
function rowsView(d) {
  const parts = [];
  if (d.whole) parts.push(el("p", { class: "meta", text: "compared whole: " + d.whole }));
  for (const s of d.schema) {
    parts.push(el("pre", { class: "diff schema-change" },
      s.oldSql ? el("span", { class: "del", text: "- " + s.oldSql }) : null,
      s.newSql ? el("span", { class: "add", text: "+ " + s.newSql }) : null));
  }
  for (const t of d.tables) {
    const oldCols = t.oldColumns || t.columns;
    const byKey = t.key.length === 1 && t.key[0] === "rowid";
    const head = el("tr", {}, el("th", { text: "" }), ...(byKey ? [el("th", { text: "rowid" })] : []), ...t.columns.map(c => el("th", { text: c })));
    const rows = t.rows.map(r => {
      const cells = t.columns.map((c, i) => {
        if (r.change === "insert") return el("td", { text: cellText(r.new[i]) });
        const j = oldCols.indexOf(c);
        const was = j >= 0 && r.old ? cellText(r.old[j]) : "";
        if (r.change === "delete") return el("td", { text: was });
        if ((r.changed || []).includes(c)) return el("td", { class: "changed" }, el("del", { text: was }), " → ", el("ins", { text: cellText(r.new[i]) }));
        return el("td", { text: cellText(r.new[i]) });
      });
      const mark = { insert: "+", delete: "-", update: "~" }[r.change];
      return el("tr", { class: "row-" + r.change }, el("td", { text: mark }), ...(byKey ? [el("td", { text: cellText(r.key[0]) })] : []), ...cells);
    });
    parts.push(el("h3", { class: "row-table", text: t.name + " (" + t.kind + (t.schema ? ", " + t.schema : "") + "): " + t.inserted + " inserted, " + t.updated + " updated, " + t.deleted + " deleted" }),
      el("div", { class: "scroll" }, el("table", { class: "rows" }, head, ...rows)));
  }
  return el("div", { class: "row-diff" }, ...parts);
}

// changeViews renders changes read at commit cid (its values link there).
function changeViews(agent, cid, changes) {
  return changes.map(ch => {
    const head = el("h2", {}, el("span", { text: ch.change + " " }),
      ch.new ? el("a", { href: "#/a/" + encodeURIComponent(agent) + "/v/" + encodeURIComponent(cid) + "/" + encodeURIComponent(ch.path), class: "key", text: ch.path })
             : el("span", { class: "key", text: ch.path }));
    let body;
    if (ch.rows) body = rowsView(ch.rows);
    else if (ch.rowsError) body = el("p", { class: "meta", text: "rows not compared: " + ch.rowsError });
    else if (ch.patch) body = patchView(ch.patch);
    else if (ch.binary) body = el("p", { class: "meta binary", text: "binary, " + ch.oldSize + " bytes → " + ch.newSize + " bytes" });
    else if (ch.large) body = el("p", { class: "meta", text: "large, " + ch.oldSize + " bytes → " + ch.newSize + " bytes (not diffed)" });
    else body = el("p", { class: "meta", text: ch.oldSize + " bytes → " + ch.newSize + " bytes" });
    return el("div", { class: "change" }, head, body);
  });
}

// viewCommit is one commit and its change against one of its parents (the
// first unless f.parent says which: a merge's change against each).
async function viewCommit(agent, rev, f) {
  const d = await api("commit?agent=" + enc(agent) + "&rev=" + enc(rev));
  const c = d.commit;
  const cut = c.cut || [];
  const parents = c.parents.map((p, i) => cut.includes(p)
    ? el("span", { class: "cut-parent" }, i === 0 && d.parentGone ? el("span", { class: "cid", title: p, text: short(p) }) : cidLink(agent, p), " (forgotten: history cut by forget)")
    : cidLink(agent, p));
  const meta = Object.entries(c.metadata || {}).map(([k, v]) => el("tr", {}, el("td", { text: k }), el("td", { class: "mono wrap", text: v })));
  const n = Math.min(Math.max(parseInt((f || {}).parent, 10) || 1, 1), Math.max(c.parents.length, 1));
  let changes = d.changes, gone = d.parentGone;
  if (n > 1) {
    const p = c.parents[n - 1];
    gone = cut.includes(p);
    changes = gone ? [] : await api("diff?" + qs({ agent, from: p, to: c.cid }));
  }
  const switcher = c.parents.length > 1 ? el("p", { id: "parent-switch", class: "switch" }, "changes against ",
    ...c.parents.flatMap((p, i) => [i ? " · " : null, i + 1 === n
      ? el("strong", { class: "parent-choice current", "data-parent": String(i + 1), text: "parent " + (i + 1) + " (" + short(p) + ")" })
      : el("a", { class: "parent-choice", "data-parent": String(i + 1), href: agentHref(agent, "/c/" + enc(c.cid) + "?parent=" + (i + 1)), text: "parent " + (i + 1) + " (" + short(p) + ")" })])) : null;
  const ordinal = ["first", "second", "third"][n - 1] || ("#" + n);
  show(
    el("h1", {}, el("a", { href: agentHref(agent), text: agent }), " / commit"),
    el("pre", { id: "message", text: c.message }),
    el("div", { class: "scroll" }, el("table", { id: "commit-meta" }, headerRow("field", "value"),
      el("tr", {}, el("td", { text: "commit" }), el("td", { class: "mono wrap", id: "cid", text: c.cid })),
      el("tr", {}, el("td", { text: "parents" }), el("td", {}, ...parents.flatMap((p, i) => i ? [" ", p] : [p]))),
      el("tr", {}, el("td", { text: "time" }), el("td", { text: when(c.time) })),
      el("tr", {}, el("td", { text: "bundle hash" }), el("td", { class: "mono wrap", text: c.bundleHash })), ...meta)),
    c.parents.length ? el("p", { class: "actions" }, el("a", { id: "compare-link", href: agentHref(agent, "/compare?" + qs({ from: c.parents[n - 1], to: c.cid })), text: "compare with another commit…" })) : null,
    el("h2", { id: "changes-title", text: "Changes against the " + ordinal + " parent" }), switcher,
    gone ? el("p", { class: "meta cut", id: "parent-gone", text: "The " + ordinal + " parent was forgotten (history cut by forget): what this commit changed is not known." })
         : el("div", { id: "changes" }, ...(changes.length ? changeViews(agent, c.cid, changes) : [el("p", { class: "meta", text: "No change." })])));
}

// viewCompare is the change between any two revisions, with a picker.
async function viewCompare(agent, f) {
  const from = el("input", { id: "compare-from", name: "from", placeholder: "from: a revision (CID, tag, HEAD~3…)", value: f.from || "" });
  const to = el("input", { id: "compare-to", name: "to", placeholder: "to: a revision", value: f.to || "HEAD" });
  const form = el("form", { id: "compare-form", class: "search" }, el("label", {}, "from ", from), el("label", {}, "to ", to), el("button", { type: "submit", text: "compare" }));
  form.addEventListener("submit", ev => { ev.preventDefault(); location.hash = agentHref(agent, "/compare?" + qs({ from: from.value, to: to.value })); });
  const head = [el("h1", {}, el("a", { href: agentHref(agent), text: agent }), " / compare"), form];
  if (!f.from) { show(...head, el("p", { class: "meta", text: "Pick two revisions, or two commits in the history." })); return; }
  const [a, b] = await Promise.all([api("commit?" + qs({ agent, rev: f.from })), api("commit?" + qs({ agent, rev: f.to || "HEAD" }))]);
  const changes = await api("diff?" + qs({ agent, from: a.commit.cid, to: b.commit.cid }));
  const side = (label, c) => el("tr", {}, el("td", { text: label }), el("td", {}, cidLink(agent, c.cid)), el("td", { class: "msg", text: c.message }), el("td", { class: "meta when", text: when(c.time) }));
  show(...head,
    el("div", { class: "scroll" }, el("table", { id: "compare-sides" }, headerRow("", "commit", "message", "time"), side("from", a.commit), side("to", b.commit))),
    el("h2", { text: changes.length + (changes.length === 1 ? " key differs" : " keys differ") }),
    el("div", { id: "changes" }, ...(changes.length ? changeViews(agent, b.commit.cid, changes) : [el("p", { class: "meta", text: "No change." })])));
}

async function viewValue(agent, rev, key) {
  const q = "agent=" + encodeURIComponent(agent) + "&rev=" + encodeURIComponent(rev) + "&key=" + encodeURIComponent(key);
  const v = await api("value?" + q);
  let body;
  if (v.text != null) body = el("pre", { id: "value", text: v.text });
  else if (v.redacted) body = el("p", { id: "value-redacted", class: "meta", text: v.omitted });
  else body = el("p", { id: "value-binary", text: (v.omitted || "binary value") + ", " + v.size + " bytes " }, el("a", { href: "/api/raw?" + q, text: "download" }));
  const keyLog = [" · ", el("a", { id: "key-history", href: agentHref(agent, "/history?" + qs({ path: key, rev: v.commit })), text: "history of this key" })];
  const blame = v.text != null ? [" · ", el("a", { id: "blame-link", href: "#/a/" + encodeURIComponent(agent) + "/b/" + encodeURIComponent(v.commit) + "/" + encodeURIComponent(key), text: "blame" })] : [];
  if (v.text == null && !v.redacted) {
    // A SQLite value: its tables, through the read model (an error means it is not one).
    const tables = await api("sql/tables?" + q).catch(() => null);
    if (tables) blame.push(" · ", el("a", { id: "sql-link", href: "#/a/" + encodeURIComponent(agent) + "/sql/" + encodeURIComponent(v.commit) + "/" + encodeURIComponent(key), text: "SQLite: " + tables.tables.length + " tables" }));
  }
  show(el("h1", {}, el("a", { href: "#/a/" + encodeURIComponent(agent), text: agent }), " / ", el("span", { class: "key", text: key })),
    el("p", { class: "meta" }, "at ", cidLink(agent, v.commit), " · value ", el("span", { class: "mono", text: short(v.cid) }), " · " + v.size + " bytes", ...blame, ...keyLog), body);
}

// viewBlame shows each line of a text value with the commit and task that
// last changed it; a line at a forget cut is marked "^" (it may be older).
async function viewBlame(agent, rev, key) {
  const b = await api("blame?agent=" + encodeURIComponent(agent) + "&rev=" + encodeURIComponent(rev) + "&key=" + encodeURIComponent(key));
  const rows = b.lines.map(l => el("tr", { class: l.boundary ? "line boundary" : "line", "data-commit": l.commit },
    el("td", {}, l.boundary ? el("span", { class: "boundary-mark", title: "history cut by forget here: the line may be older", text: "^" }) : null, cidLink(agent, l.commit)),
    el("td", { class: "meta task", text: l.task }), el("td", { class: "meta", text: when(l.time) }),
    el("td", { class: "meta lineno", text: String(l.line) }), el("td", { class: "text" }, el("code", { text: l.text }))));
  show(el("h1", {}, el("a", { href: "#/a/" + encodeURIComponent(agent), text: agent }), " / ",
    el("a", { class: "key", href: "#/a/" + encodeURIComponent(agent) + "/v/" + encodeURIComponent(b.commit) + "/" + encodeURIComponent(key), text: key }), " / blame"),
    el("p", { class: "meta" }, "at ", cidLink(agent, b.commit), " · value ", el("span", { class: "mono", text: short(b.cid) }), " · " + b.lines.length + " lines"),
    el("div", { class: "scroll" }, el("table", { id: "blame" }, headerRow("commit", "task", "time", "line", "text"), ...rows)));
}

// sqlCell shows one typed value of a SQLite row: NULL and blobs marked,
// everything as text.
function sqlCell(c) {
  if (c === null) return el("td", { class: "meta null", text: "NULL" });
  if (typeof c === "object" && c.base64 != null) return el("td", { class: "meta blob", title: c.base64, text: "blob, " + atob(c.base64).length + " bytes" });
  return el("td", { class: typeof c === "number" ? "num" : "text", text: String(c) });
}

function sqlHeader(agent, rev, key, commit, rest) {
  return [el("h1", {}, el("a", { href: "#/a/" + encodeURIComponent(agent), text: agent }), " / ",
    el("a", { class: "key", href: "#/a/" + encodeURIComponent(agent) + "/v/" + encodeURIComponent(commit) + "/" + encodeURIComponent(key), text: key }), ...rest)];
}

// viewSQLTables lists a SQLite value's tables and views at a commit.
async function viewSQLTables(agent, rev, key) {
  const q = "agent=" + encodeURIComponent(agent) + "&rev=" + encodeURIComponent(rev) + "&key=" + encodeURIComponent(key);
  const [t, v] = await Promise.all([api("sql/tables?" + q), api("value?" + q)]);
  const rows = t.tables.map(tb => el("tr", { class: tb.shadow ? "sql-table shadow" : "sql-table" },
    el("td", {}, el("a", { class: "table-name", href: "#/a/" + encodeURIComponent(agent) + "/rows/" + encodeURIComponent(v.commit) + "/" + encodeURIComponent(tb.name) + "/0/" + encodeURIComponent(key), text: tb.name })),
    el("td", { class: "meta", text: tb.type + (tb.shadow ? " (FTS5 storage)" : "") }), el("td", {}, el("code", { text: tb.sql }))));
  show(...sqlHeader(agent, rev, key, v.commit, [" / tables"]),
    el("p", { class: "meta" }, "at ", cidLink(agent, v.commit), " · value ", el("span", { class: "mono", text: short(v.cid) }), " · " + v.size + " bytes, read from the store without a checkout"),
    el("div", { class: "scroll" }, el("table", { id: "sql-tables" }, headerRow("name", "type", "definition"), ...rows)));
}

// viewSQLRows pages through one table of a SQLite value at a commit.
async function viewSQLRows(agent, rev, table, offset, key) {
  const page = 50;
  offset = Math.max(0, parseInt(offset, 10) || 0);
  const r = await api("sql/rows?agent=" + encodeURIComponent(agent) + "&rev=" + encodeURIComponent(rev) + "&key=" + encodeURIComponent(key) +
    "&table=" + encodeURIComponent(table) + "&offset=" + offset + "&limit=" + page);
  const to = o => "#/a/" + encodeURIComponent(agent) + "/rows/" + encodeURIComponent(r.commit) + "/" + encodeURIComponent(table) + "/" + o + "/" + encodeURIComponent(key);
  const nav = el("p", { class: "meta", id: "rows-nav" },
    offset > 0 ? el("a", { id: "rows-prev", href: to(Math.max(0, offset - page)), text: "← previous" }) : null,
    " rows " + (r.rows.length ? (offset + 1) + "–" + (offset + r.rows.length) : "none") + " ",
    r.truncated ? el("a", { id: "rows-next", href: to(offset + page), text: "next →" }) : null);
  show(...sqlHeader(agent, rev, key, r.commit, [" / ",
    el("a", { href: "#/a/" + encodeURIComponent(agent) + "/sql/" + encodeURIComponent(r.commit) + "/" + encodeURIComponent(key), text: "tables" }), " / ", el("span", { class: "table-name", text: table })]),
    el("p", { class: "meta" }, "at ", cidLink(agent, r.commit)), nav,
    el("div", { class: "scroll" }, el("table", { id: "sql-rows" }, el("tr", {}, ...r.columns.map(c => el("th", { text: c }))),
      ...r.rows.map(row => el("tr", { class: "sql-row" }, ...row.map(sqlCell))))));
}

// taskName is a task's ID with its attempt, as a task revision writes it.
function taskName(t) { return t.attempt ? t.id + "@" + t.attempt : t.id; }
function taskLink(agent, t) {
  return el("a", { href: "#/a/" + encodeURIComponent(agent) + "/t/" + encodeURIComponent(taskName(t)), class: "task", text: taskName(t) });
}
function receiptCell(t) {
  const text = { verified: "verified", failed: "FAILED: " + (t.receiptError || ""), unchecked: "not verified", none: "no receipt (found from its commits)" }[t.receipt] || t.receipt;
  return el("td", { class: "receipt-state " + (t.receipt === "failed" ? "bad" : t.receipt === "verified" ? "ok" : "meta"), text: text + (t.receiptNote ? " (" + t.receiptNote + ")" : "") });
}

// tasksTable is a page of the task log: one row per landed task, its
// commits folded.
function tasksTable(agent, lg) {
  if (lg.tasks.length === 0) return el("p", { id: "no-tasks", text: "No task landed in this history." });
  const rows = lg.tasks.map(t => el("tr", { class: "task-row", "data-task": taskName(t), "data-commit": t.commit },
    el("td", {}, taskLink(agent, t), t.commit === lg.head ? el("span", { class: "head", text: "HEAD" }) : null, t.merge ? el("span", { class: "merge", text: "merge" }) : null),
    el("td", {}, cidLink(agent, t.commit)),
    el("td", { class: "meta commits", text: t.commits + (t.commits === 1 ? " commit" : " commits") }),
    el("td", { class: "meta keys", title: t.keys.join("\n"), text: t.keys.length + (t.keys.length === 1 ? " key" : " keys") }),
    el("td", { class: "mono", title: t.bundleBefore + " → " + t.bundleAfter, text: t.bundleBefore.slice(0, 10) + " → " + t.bundleAfter.slice(0, 10) }),
    el("td", { class: "meta", text: [t.model, when(t.time)].filter(Boolean).join(" · ") }), receiptCell(t)));
  return el("table", { id: "tasks" }, el("tr", {}, ...["task", "landed", "commits", "keys", "bundle", "model · time", "receipt"].map(h => el("th", { text: h }))), ...rows);
}

// viewTasks is the history grouped by task, a page at a time.
async function viewTasks(agent, skip) {
  skip = Math.max(0, parseInt(skip, 10) || 0);
  const n = 50;
  const lg = await api("tasks?agent=" + encodeURIComponent(agent) + "&skip=" + skip + "&limit=" + n);
  const base = "#/a/" + encodeURIComponent(agent) + "/tasks/";
  show(el("h1", {}, el("a", { href: "#/a/" + encodeURIComponent(agent), text: agent }), " / tasks"),
    el("p", { class: "meta" }, "tasks " + (skip + 1) + "–" + (skip + lg.tasks.length),
      ...(skip > 0 ? [" · ", el("a", { id: "newer-tasks", href: base + Math.max(0, skip - n), text: "newer" })] : []),
      ...(lg.more ? [" · ", el("a", { id: "older-tasks", href: base + (skip + n), text: "older" })] : [])),
    tasksTable(agent, lg));
}

// viewTask is one task: what it is, its receipt, its commits and its whole
// change from the commit it started from.
async function viewTask(agent, id) {
  const d = await api("task?agent=" + encodeURIComponent(agent) + "&id=" + encodeURIComponent(id));
  const t = d.task;
  const row = (k, ...v) => el("tr", {}, el("td", { text: k }), el("td", {}, ...v));
  const rc = d.receipt && d.receipt.receipt;
  show(
    el("h1", {}, el("a", { href: "#/a/" + encodeURIComponent(agent), text: agent }), " / task ", el("span", { id: "task-name", text: taskName(t) })),
    el("div", { class: "scroll" }, el("table", { id: "task" }, headerRow("field", "value"),
      row("landed", cidLink(agent, t.commit), t.merge ? el("span", { class: "merge", text: "merge" }) : null),
      t.merge ? row("its own last commit", cidLink(agent, t.taskCommit)) : null,
      row("started from", t.start ? cidLink(agent, t.start) : el("span", { class: "meta", text: "no state (the agent's first task)" })),
      row("time", when(t.time)),
      t.model ? row("model", t.model) : null,
      t.adapter ? row("adapter", t.adapter) : null,
      row("bundle hash", el("span", { class: "mono wrap", text: t.bundleBefore + " → " + t.bundleAfter })),
      el("tr", {}, el("td", { text: "receipt" }), receiptCell(t)),
      rc ? row("operator", el("span", { class: "mono wrap", text: rc.operator })) : null)),
    el("h2", { text: "Commits" }),
    el("div", { class: "scroll" }, el("table", { id: "task-commits" }, headerRow("commit", "message", "time"), ...d.commits.map(c => el("tr", { class: "task-commit" },
      el("td", {}, cidLink(agent, c.cid)), el("td", { class: "msg", text: c.message }), el("td", { class: "meta when", text: when(c.time) }))))),
    el("h2", { text: "Its whole change, from the commit it started from" }),
    d.changes.length ? el("div", { id: "changes" }, ...changeViews(agent, t.taskCommit, d.changes)) : el("p", { class: "meta", id: "changes", text: "No change." }));
}

async function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const qi = hash.indexOf("?");
  const f = Object.fromEntries(new URLSearchParams(qi < 0 ? "" : hash.slice(qi + 1)));
  const parts = (qi < 0 ? hash : hash.slice(0, qi)).split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "a" && parts[1]) {
      if (parts[2] === "c" && parts[3]) return await viewCommit(parts[1], parts[3], f);
      if (parts[2] === "v" && parts[3] && parts.length > 4) return await viewValue(parts[1], parts[3], parts.slice(4).join("/"));
      if (parts[2] === "b" && parts[3] && parts.length > 4) return await viewBlame(parts[1], parts[3], parts.slice(4).join("/"));
      if (parts[2] === "sql" && parts[3] && parts.length > 4) return await viewSQLTables(parts[1], parts[3], parts.slice(4).join("/"));
      if (parts[2] === "rows" && parts[3] && parts.length > 6) return await viewSQLRows(parts[1], parts[3], parts[4], parts[5], parts.slice(6).join("/"));
      if (parts[2] === "t" && parts.length > 3) return await viewTask(parts[1], parts.slice(3).join("/"));
      if (parts[2] === "tasks") return await viewTasks(parts[1], parts[3]);
      if (parts[2] === "history") return await viewHistory(parts[1], f);
      if (parts[2] === "compare") return await viewCompare(parts[1], f);
      if (parts[2] === "ops") return await viewOps(parts[1], f);
      if (parts[2] === "receipts") return await viewReceipts(parts[1], f);
      return await viewAgent(parts[1]);
    }
    return await viewAgents();
  } catch (err) {
    showError(err);
  }
}

// Keyboard: j/k move through the view's list (its commits, else its tasks,
// operations or receipts), Enter opens the row's link, Esc goes up (to the agent, then to
// the agents). Keys typed into a form are the form's.
let selected = -1;
function navRows() {
  for (const sel of ["tr.commit, tr.task-group", "tr.task-row", "tr.task-commit", "tr.op", "tr.receipt"]) {
    const rows = [...main.querySelectorAll(sel)].filter(r => !r.hidden);
    if (rows.length) return rows;
  }
  return [];
}
document.addEventListener("keydown", ev => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.closest("input, textarea, select, button")) return;
  const rows = navRows();
  if (ev.key === "j" || ev.key === "k") {
    if (!rows.length) return;
    selected = Math.min(Math.max(ev.key === "j" ? selected + 1 : selected - 1, 0), rows.length - 1);
    rows.forEach((r, i) => r.classList.toggle("selected", i === selected));
    rows[selected].scrollIntoView({ block: "nearest" });
  } else if (ev.key === "Enter" && rows[selected]) {
    const a = rows[selected].querySelector("a.msg, a.task, a");
    if (a) location.hash = a.getAttribute("href");
  } else if (ev.key === "Escape") {
    const m = location.hash.match(/^#\/a\/([^/?]+)(.)?/);
    location.hash = m && m[2] ? "#/a/" + m[1] : "#/";
  } else return;
  ev.preventDefault();
});
window.addEventListener("hashchange", () => { selected = -1; });

// A new view starts at its top (a live update keeps the place).
window.addEventListener("hashchange", () => route().then(() => window.scrollTo(0, 0)));
route();

// Live: the server sends an event whenever a HEAD moves.
const live = document.getElementById("live");
const events = new EventSource("/api/events");
let pending = false;
events.addEventListener("head", () => {
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; route(); }, 150);
});
events.onopen = () => live.classList.remove("off");
events.onerror = () => live.classList.add("off");
