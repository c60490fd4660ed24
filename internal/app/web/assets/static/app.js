// logtool serve: the little the pages need. The live session page
// (server-sent events: HTML the server rendered with its own templates,
// and so escaped, put where the page shows it) and the stop and verdict
// cells of the session list (from /api/stat, as stat --json).
"use strict";

// html parses HTML the server rendered into nodes.
function html(s) {
  const t = document.createElement("template");
  t.innerHTML = s;
  return t.content;
}

// replace puts the server's new rendering of an element in its place.
function replace(id, s) {
  const el = document.getElementById(id);
  if (el && s) el.replaceWith(html(s));
}

function fresh(nodes) {
  for (const n of nodes) if (n.classList) n.classList.add("fresh");
}

// apply puts one update of the live view in the page: the heading's facts
// and totals, the chart, new items at the end of their turn, a new turn
// first (the page shows the last turns first), and what is still growing
// (streamed text, a run of records) in place of what it replaces.
function apply(box, u) {
  for (const id of ["facts", "usage", "chart", "pager"]) replace(id, u[id]);
  const held = document.getElementById("held");
  if (held) held.remove();
  for (const g of u.groups || []) {
    const sec = document.getElementById(g.id);
    if (!sec) {
      const n = html(g.section);
      fresh(n.querySelectorAll(".item"));
      box.prepend(n);
      continue;
    }
    if (g.head) sec.querySelector("h2").replaceChildren(html(g.head));
    if (g.items) {
      const n = html(g.items);
      fresh(n.children);
      sec.querySelector(".branch").append(n);
    }
  }
  if (u.held) {
    const sec = document.getElementById(u.heldIn);
    if (sec) sec.querySelector(".branch").append(html(u.held));
  }
}

function follow(box) {
  const src = new EventSource(box.dataset.follow);
  src.onmessage = (m) => {
    const u = JSON.parse(m.data);
    if (u.reload) { // a rollback: what the items before it mean changed
      src.close();
      location.reload();
      return;
    }
    apply(box, u);
  };
  src.addEventListener("failed", (m) => {
    const p = document.createElement("p");
    p.className = "verdict-fail";
    p.textContent = "live view stopped: " + m.data;
    box.prepend(p);
    src.close();
  });
}

async function stops(rows) {
  for (const row of rows) {
    const id = row.dataset.id;
    try {
      const r = await fetch("/api/stat/" + encodeURIComponent(id));
      if (!r.ok) { row.querySelector(".stop").textContent = "?"; continue; }
      const st = await r.json();
      const stop = st.stop || {};
      row.querySelector(".stop").textContent = st.openTurn ? "turn open" : (stop.kind || "-");
      const v = stop.verdict || {};
      const cell = row.querySelector(".verdict");
      cell.textContent = v.resumable ? "may continue" : "may not continue";
      cell.title = v.reason || "";
    } catch (e) {
      row.querySelector(".stop").textContent = "?";
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("turns");
  if (box && box.dataset.follow) follow(box);
  stops(document.querySelectorAll("tr.session"));
});
