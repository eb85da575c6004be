// autorl view: the live run page polls its JSON endpoint and rewrites the submissions table and
// the budget bar; a running campaign's page reloads itself. Text only (textContent), never HTML:
// everything a run holds is written by an untrusted agent.
"use strict";

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text == null ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function duration(s) {
  if (typeof s !== "number") return "";
  if (s < 120) return s.toFixed(1) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(2) + " h";
}

function render(data) {
  const body = document.querySelector("#submissions tbody");
  if (body) {
    const rows = data.submissions.map((s) => {
      const tr = document.createElement("tr");
      tr.dataset.id = String(s.id);
      const hash = cell("");
      const code = document.createElement("code");
      code.textContent = s.weight_hash;
      hash.appendChild(code);
      tr.append(cell(s.id), cell(s.elapsed), cell(s.status), cell(s.reason), cell(s.score, "num"), hash);
      return tr;
    });
    if (rows.length) body.replaceChildren(...rows);
  }
  const bar = document.getElementById("budget-bar");
  if (bar && typeof data.agent_seconds === "number") {
    if (typeof data.budget_seconds === "number") bar.max = data.budget_seconds;
    bar.value = data.agent_seconds;
    const text = document.getElementById("budget-text");
    if (text) {
      text.textContent = duration(data.agent_seconds) +
        (typeof data.budget_seconds === "number" ? " of " + duration(data.budget_seconds) : "");
    }
  }
  const status = document.getElementById("status");
  if (status) status.textContent = data.status;
  const reason = document.getElementById("end-reason");
  if (reason) reason.textContent = data.end_reason || "";
}

function poll(url, every) {
  fetch(url, { credentials: "same-origin", cache: "no-store" })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(r.status))))
    .then((data) => {
      render(data);
      document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
      if (data.status === "running") {
        setTimeout(() => poll(url, every), every);
      } else {
        const badge = document.getElementById("live-badge");
        if (badge) badge.textContent = "ended: reload for the analysis";
      }
    })
    .catch(() => setTimeout(() => poll(url, every), every * 2));
}

document.addEventListener("DOMContentLoaded", () => {
  const body = document.body;
  const every = Number(body.dataset.pollMs || 2000);
  if (body.dataset.running === "yes" && body.dataset.liveUrl) {
    setTimeout(() => poll(body.dataset.liveUrl, every), every);
  }
  const reload = Number(body.dataset.reloadMs || 0);
  if (reload > 0) setTimeout(() => window.location.reload(), reload);
});
