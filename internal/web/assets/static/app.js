// logtool serve: the little the pages need. Live updates of a session
// (server-sent events, rendered and escaped by the server) and the stop
// and verdict cells of the session list (from /api/stat, as stat --json).
"use strict";

function follow(box) {
  const src = new EventSource(box.dataset.follow);
  src.onmessage = (m) => {
    const t = document.createElement("template");
    t.innerHTML = m.data; // HTML the server rendered with html/template
    box.prepend(t.content);
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
  const box = document.getElementById("live");
  if (box && box.dataset.follow) follow(box);
  stops(document.querySelectorAll("tr.session"));
});
