// rewake's page: times in the viewer's zone, live countdowns, and the card's actions, which
// call the JSON API like any client (the sign-in cookie counts only with X-Rewake-Page: 1).
"use strict";

(function () {
  const body = document.body;
  // Count down against the server's clock, which decides when a mark is due, not the
  // browser's, which may be off.
  const serverNow = Date.parse(body.dataset.now || "");
  const skewMs = Number.isNaN(serverNow) ? 0 : serverNow - Date.now();
  const now = () => Date.now() + skewMs;
  const words = JSON.parse(document.getElementById("refusal-words").textContent || "{}");

  const dayKey = new Intl.DateTimeFormat("en-CA", { year: "numeric", month: "2-digit", day: "2-digit" });
  const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
  const dated = new Intl.DateTimeFormat(undefined, {
    weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZoneName: "short",
  });
  const hour = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const full = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });

  function localize() {
    const today = dayKey.format(new Date(now()));
    for (const el of document.querySelectorAll("time[data-local]")) {
      const at = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(at.getTime())) continue;
      el.textContent = (dayKey.format(at) === today ? clock : dated).format(at);
      el.title = full.format(at) + " (" + el.getAttribute("datetime") + ")";
    }
    // The picture's axis and its markers' titles (SVG text, which holds no <time>).
    for (const el of document.querySelectorAll("svg [data-at]")) {
      const at = new Date(el.dataset.at);
      if (Number.isNaN(at.getTime())) continue;
      const shown = (el.dataset.form === "hour" ? hour : dayKey.format(at) === today ? clock : dated).format(at);
      el.textContent = (el.dataset.prefix || "") + shown;
    }
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    for (const el of document.querySelectorAll("[data-zone]")) el.textContent = zone + " (your browser's zone)";
  }

  function describe(ms) {
    const total = Math.floor(ms / 1000);
    const d = Math.floor(total / 86400), h = Math.floor((total % 86400) / 3600);
    const m = Math.floor((total % 3600) / 60), s = total % 60;
    if (d) return "in " + d + " d " + h + " h";
    if (h) return "in " + h + " h " + m + " min " + String(s).padStart(2, "0") + " s";
    if (m) return "in " + m + " min " + String(s).padStart(2, "0") + " s";
    return "in " + s + " s";
  }

  function tick() {
    for (const el of document.querySelectorAll(".countdown[data-until]")) {
      const left = Date.parse(el.dataset.until) - now();
      el.textContent = left > 0 ? describe(left) : el.dataset.past || "already passed";
    }
  }

  function refusal(problem, status) {
    const code = problem && problem.code;
    const said = words[code] || "";
    const detail = (problem && problem.detail) || "the service answered " + status;
    return "Refused: " + (said ? said + " rewake says: " + detail + "." : detail + ".");
  }

  async function act(button) {
    const card = button.closest("[data-root-id]");
    const feedback = card.querySelector("[data-feedback]");
    const root = encodeURIComponent(card.dataset.rootId);
    const action = button.dataset.action;
    let url = "/api/agent/runs/" + root + "/auto-resume", method = "PUT", payload;
    if (action === "arm") payload = { enabled: true, despite_native: button.dataset.despiteNative === "true" };
    else if (action === "disarm") payload = { enabled: false };
    else { url += "/resolve"; method = "POST"; payload = { outcome: button.dataset.outcome }; }
    const enabled = [...card.querySelectorAll("button[data-action]:not([disabled])")];
    for (const b of enabled) b.disabled = true;
    feedback.className = "feedback";
    feedback.textContent = "Sending…";
    try {
      const answer = await fetch(url, {
        method, credentials: "same-origin", body: JSON.stringify(payload),
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-Rewake-Page": "1" },
      });
      if (answer.ok) { window.location.reload(); return; }
      let problem = null;
      try { problem = await answer.json(); } catch (_) { /* not JSON: say the status */ }
      feedback.className = "feedback refused";
      feedback.textContent = refusal(problem, answer.status);
      if (answer.status === 401) {
        const link = document.createElement("a");
        link.href = "/sign-in?next=" + encodeURIComponent(location.pathname) + "&why=expired";
        link.textContent = " Sign in again.";
        feedback.append(link);
      }
    } catch (error) {
      feedback.className = "feedback refused";
      feedback.textContent = "rewake did not answer: " + error.message;
    }
    for (const b of enabled) b.disabled = false;
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button && !button.disabled) act(button);
  });
  localize();
  tick();
  setInterval(tick, 1000);
})();
