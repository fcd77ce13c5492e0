"""The status page's two documents: the page itself and its sign-in form (`hostlink.serve.status`).

Neither holds anything from a client, a server or Claude: the page fetches `/status.json` and
builds its content with `textContent` only. That JSON has `title` and `now` (Unix time), and:

- `plan`: `hostlink claude-code usage --json` (`{"plan": …, "extra_usage_guard": …}`);
- `slots` (serve only): `in_flight`, `max` and `waiting` (prewarmed `claude` children idle
  for a conversation's next round when the last answer ended; null before one);
- `columns`, `recent`: the recent requests (or calls), newest first, as `[key, heading]` pairs
  and rows of those keys (`time` is Unix time, `ms` a duration, a boolean is yes / no), and
  optionally `recent_title`, their heading;
- `servers` (gateway only): each configured server's `name`, `transport`, `state`, `error`.
"""

from __future__ import annotations

from html import escape

_STYLE = """
:root { color-scheme: light dark; --line: #8884; --muted: #777; font: 14px/1.45 system-ui, sans-serif; }
body { margin: 0 auto; max-width: 64rem; padding: 1rem 1.5rem 3rem; }
header { display: flex; align-items: baseline; gap: 1rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.4rem; margin: .6rem 0; } h2 { font-size: 1.05rem; margin: 1.6rem 0 .5rem; }
header p, .note { color: var(--muted); margin: 0; } header form { margin-left: auto; }
.window { display: grid; grid-template-columns: 10rem 16rem 9rem 1fr; gap: .8rem; align-items: center; }
meter { width: 100%; height: 1.1rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .8rem .25rem 0; border-bottom: 1px solid var(--line);
  vertical-align: top; white-space: nowrap; }
td.text { white-space: normal; overflow-wrap: anywhere; }
th { font-weight: 600; } td.failed, td.bad { color: #c33; } td.connected, td.ok { color: #393; }
.signin { max-width: 24rem; margin: 12vh auto; } .signin form { display: grid; gap: .6rem; }
input, button { font: inherit; padding: .4rem .6rem; } .problem { color: #c33; min-height: 1.4em; }
"""

_SCRIPT = """
"use strict";
const $ = (id) => document.getElementById(id);
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function span(seconds) {
  const s = Math.max(0, Math.floor(seconds)), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
  const m = Math.floor(s % 3600 / 60);
  return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : `${Math.max(m, 1)} min`;
}
const when = (t) => new Date(t * 1000).toLocaleString();
const TEXT = new Set(["model", "server", "tool", "outcome", "name", "error"]);  // free text: may wrap
function cell(key, value) {
  if (value === null || value === undefined) return "\\u2013";
  if (key === "time") return new Date(value * 1000).toLocaleTimeString();
  if (key === "ms") return `${value} ms`;
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}
function plan(data) {
  const box = $("plan"), report = data.plan && data.plan.plan, guard = data.plan && data.plan.extra_usage_guard;
  box.replaceChildren();
  if (!report) {
    box.append(el("p", "No report yet: the plan's usage comes with the answer to a request.", "note"));
  } else {
    for (const w of report.windows) {
      const row = el("div", null, "window"), meter = document.createElement("meter");
      meter.min = 0; meter.max = 1; meter.low = 0.5; meter.high = 0.8; meter.optimum = 0;
      meter.value = w.current && w.utilization !== null ? w.utilization : 0;
      const used = !w.current ? "unknown until the next request"
        : w.utilization === null ? "use not reported" : `${Math.round(w.utilization * 100)}% used`;
      const reset = w.current && w.resets_at ? `resets ${when(w.resets_at)} (in ${span(w.resets_at - data.now)})` : "";
      row.append(el("span", String(w.name).replaceAll("_", " "), "name"), meter, el("span", used), el("span", reset));
      box.append(row);
    }
    const extra = report.draws_extra_usage ? "; requests draw on extra usage now" : "";
    const age = report.age_seconds < 60 ? "just now" : `${span(report.age_seconds)} ago`;
    box.append(el("p", `status ${report.current ? report.status : "unknown"}${extra}; reported ${age}`, "note"));
  }
  if (guard) box.append(el("p", `extra usage guard: ${guard.mode}${guard.refusing ? ", refusing" : ""}`, "note"));
}
function table(id, columns, rows, classes) {
  const head = el("tr"), body = $(id).tBodies[0];
  for (const [, heading] of columns) head.append(el("th", heading));
  $(id).tHead.replaceChildren(head);
  body.replaceChildren();
  for (const row of rows) {
    const line = el("tr");
    for (const [key] of columns) {
      const kind = TEXT.has(key) ? "text" : "";
      line.append(el("td", cell(key, row[key]), `${kind} ${classes(key, row[key])}`.trim()));
    }
    body.append(line);
  }
  if (!rows.length) {
    const line = el("tr"), empty = el("td", "none yet", "note");
    empty.colSpan = columns.length;
    line.append(empty);
    body.append(line);
  }
}
function show(data) {
  plan(data);
  $("slots-section").hidden = !data.slots;
  if (data.slots) {
    const s = data.slots;
    $("slots").textContent = `${s.in_flight} of ${s.max} slots in flight; ` +
      `${s.waiting === null ? "\\u2013" : s.waiting} prewarmed claude waiting (as the last answer left them)`;
  }
  $("servers-section").hidden = !data.servers;
  if (data.servers) {
    table("servers", [["name", "server"], ["transport", "transport"], ["state", "state"], ["error", "last error"]],
      data.servers, (key, value) => key === "state" ? String(value) : "");
  }
  if (data.recent_title) $("recent-title").textContent = data.recent_title;
  table("recent", data.columns, data.recent, (key, value) =>
    key === "outcome" ? (value === "ok" ? "ok" : "bad") : key === "status" ? (value >= 400 ? "bad" : "ok") : "");
  $("updated").textContent = `updated ${new Date(data.now * 1000).toLocaleTimeString()}`;
}
async function refresh() {
  try {
    const answer = await fetch("/status.json", {cache: "no-store", credentials: "same-origin"});
    if (answer.status === 401) { location.reload(); return; }
    if (answer.ok) show(await answer.json());
  } catch (error) {
    $("updated").textContent = "the server does not answer";
  }
  setTimeout(refresh, 2000);
}
refresh();
"""


def _head(title: str, nonce: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="referrer" content="same-origin"><title>{escape(title)}</title>'
            f'<style nonce="{nonce}">{_STYLE}</style></head>')


def page(title: str, nonce: str) -> str:
    """The page: empty sections its script fills from `/status.json`."""
    return (_head(title, nonce) +
            f'<body><header><h1>{escape(title)}</h1><p id="updated">loading</p>'
            '<form method="post" action="/sign-out"><button type="submit">Sign out</button></form></header>'
            '<main><section><h2>Claude plan</h2><div id="plan"></div></section>'
            '<section id="slots-section" hidden><h2>Slots</h2><p id="slots"></p></section>'
            '<section id="servers-section" hidden><h2>MCP servers</h2>'
            '<table id="servers"><thead></thead><tbody></tbody></table></section>'
            '<section><h2 id="recent-title">Recent requests</h2>'
            '<table id="recent"><thead></thead><tbody></tbody></table></section>'
            f'</main><script nonce="{nonce}">{_SCRIPT}</script></body></html>')


def sign_in_form(title: str, nonce: str, problem: str) -> str:
    """The sign-in form: the key goes in a POST body, never in a URL."""
    return (_head(f"{title}: sign in", nonce) +
            f'<body><main class="signin"><h1>{escape(title)}</h1>'
            '<form method="post" action="/"><label for="key">Key (the one its clients use)</label>'
            '<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>'
            f'<button type="submit">Sign in</button></form><p class="problem">{escape(problem)}</p>'
            '<p class="note">Signing in sets a cookie for this page only, for 12 hours or until the server stops.</p>'
            '</main></body></html>')
