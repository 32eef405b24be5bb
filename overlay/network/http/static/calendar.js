/* The reservations calendar: a Gantt view of the ARs by node (vis-timeline),
 * ARs sharing a node stacked, ended and cancelled ones too; an AR's detail
 * and its link (#ar=<id>); booking in a free span (RESQUERY, then SETRES);
 * changing or cancelling one's own ARs (a cancel can be undone while the AR
 * waits); filters and search; times in the site's zone or the user's; and
 * reserved against used node-hours.
 *
 * Every call is the HTTP API's (/v1), with the bearer token that the
 * one-time link of plus_web was exchanged for, or the site's identity
 * provider gave; the daemon decides what the caller may do.
 * The timeline holds one page of node rows at a time: vis-timeline draws
 * every row it holds, and a thousand rows would take seconds. */
"use strict";

const API = "/v1";
const STATES = {w: "waiting", r: "running", x: "exited", d: "deleted", W: "warning",
                E: "error", p: "pending", h: "awaiting"};
const STATE_WORDS = {w: "waiting", r: "running", x: "ended", d: "cancelled",
                     W: "warning", E: "error", p: "pending (-T)", h: "awaiting approval"};
const LIVE = "wrpWEh";
const POLL_MS = 5000;
const SETTLE_MS = 300;
const ROW_PX = 28;
const HOUR = 3600;
const WEEK = 7 * 86400;
const WIDEN_AFTER_MS = 250;
const UNDO_SECONDS = 10;
const COMMIT_MARGIN = 5;
const LISTED_STARTS = 5;
const LISTED_FOUND = 20;
const IN_WINDOW = "rWE";
const HOST_NAME = ["hostname", "h"];

const view = {
  token: null, user: null, manager: false, config: {}, zone: "UTC",
  nodes: [], slots: {}, properties: {}, page: 0, pageSize: 30,
  loaded: null, asked: null, widening: null, revision: null, tickets: 0, loading: 0,
  ars: [], jobs: [], starts: [], free: {}, booking: null, pendingStart: null,
  shown: null, undo: null, pendingHost: null,
  timeline: null, items: null, groups: null, usageChart: null,
  live: null, touched: new Set(), stale: false, settling: null, reloads: 0,
  arUsage: null,
};

class ApiError extends Error {
  constructor(status, text) { super(text); this.status = status; }
}

function headers(body) {
  const sent = {"Authorization": "Bearer " + view.token};
  if (body !== undefined) sent["Content-Type"] = "application/json";
  return sent;
}

async function api(method, path, body) {
  const response = await fetch(API + path, {method, headers: headers(body),
                                            body: body === undefined ? undefined : JSON.stringify(body)});
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  if (!response.ok) {
    const text = data && typeof data.error === "string" ? data.error : response.statusText;
    if (response.status === 401) sessionStorage.removeItem("plus.token");
    throw new ApiError(response.status, text);
  }
  return data;
}

function $(id) { return document.getElementById(id); }

function say(text, info) {
  const box = $("message");
  box.textContent = text;
  box.className = info ? "info" : "";
  box.hidden = !text;
}

/* vis-timeline renders an item's content and title as HTML: names from
 * the daemon go in as text, whatever characters they hold. */
function html(text) {
  return String(text).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
}

function length(seconds) {
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60);
  return `${h}:${String(m).padStart(2, "0")}`;
}

/* -- times in a zone: the site's (GET /web/config) unless the user chose
 *    another; the timeline's axis, every time shown and every time typed ---- */

const formats = new Map();

function format(zone, options) {
  const key = zone + JSON.stringify(options);
  if (!formats.has(key)) formats.set(key, new Intl.DateTimeFormat("en-US", {timeZone: zone, ...options}));
  return formats.get(key);
}

const offsets = new Map();
const OFFSET_SLOT_MS = 15 * 60000;

/* The zone's offset from UTC in minutes at ``ms``: zones change offset on
 * quarter hours, so one answer per quarter hour is kept. */
function offsetMinutes(ms, zone) {
  const slot = Math.floor(ms / OFFSET_SLOT_MS), key = `${zone} ${slot}`;
  if (!offsets.has(key)) {
    if (offsets.size > 20000) offsets.clear();
    const at = slot * OFFSET_SLOT_MS;
    const parts = format(zone, {hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
                                hour: "numeric", minute: "numeric"}).formatToParts(new Date(at));
    const get = type => Number(parts.find(p => p.type === type).value);
    const shown = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour") % 24, get("minute"));
    offsets.set(key, Math.round((shown - at) / 60000));
  }
  return offsets.get(key);
}

function when(seconds) {
  return format(view.zone, {year: "numeric", month: "short", day: "numeric", hour: "2-digit",
                            minute: "2-digit", hourCycle: "h23", timeZoneName: "short"})
    .format(new Date(seconds * 1000));
}

/* ``seconds`` as a datetime-local input's value in the zone. */
function zoneInput(seconds) {
  const ms = seconds * 1000 + offsetMinutes(seconds * 1000, view.zone) * 60000;
  return new Date(ms).toISOString().slice(0, 16);
}

/* A datetime-local input's value, read in the zone: epoch seconds, or null. */
function zoneTime(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m) return null;
  const shown = Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
  let ms = shown - offsetMinutes(shown, view.zone) * 60000;
  ms = shown - offsetMinutes(ms, view.zone) * 60000;
  return ms / 1000;
}

function zones() {
  const all = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  const browser = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const first = [[view.config.timezone, "the site's"], ["UTC", ""], [browser, "this browser's"]];
  const options = [], seen = new Set();
  for (const [zone, whose] of [...first, ...all.map(z => [z, ""])]) {
    if (!zone || seen.has(zone)) continue;
    seen.add(zone);
    options.push(new Option(whose ? `${zone} (${whose})` : zone, zone));
  }
  return options;
}

function chooseZone(zone) {
  view.zone = zone;
  $("zone").value = zone;
  if (zone === view.config.timezone) localStorage.removeItem("plus.zone");
  else localStorage.setItem("plus.zone", zone);
  if (view.timeline) {
    view.timeline.setOptions({moment: zoned});
    draw();
    if (view.shown) showDetail(view.shown.id).catch(error => say(error.message));
  }
}

/* vis-timeline's dates, in the zone (its axis and labels). */
function zoned(date) {
  const moment = vis.moment(date);
  return moment.utcOffset(offsetMinutes(moment.valueOf(), view.zone));
}

/* -- login: plus_web's one-time code, exchanged once for a session token, or
 *    the site's identity provider (authorization code with PKCE, a public
 *    client: its access token is the API's bearer token) ------------------------ */

async function login() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  const returned = new URLSearchParams(location.search);
  if (code) {
    history.replaceState(null, "", location.pathname + location.search);
    const response = await fetch("/web/session", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({code})});
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new ApiError(response.status, data.error || response.statusText);
    sessionStorage.setItem("plus.token", data.token);
  } else if (returned.has("state")) {
    await providerReturned(returned);
  }
  view.token = sessionStorage.getItem("plus.token");
  if (!view.token) {
    const config = view.config;
    if (config.oidc) offerProviderSignIn(config.oidc);
    throw new ApiError(401, (config.oidc ? "Sign in with your site's account, or open "
                                         : "Open ") + "the link that plus_web prints on the "
                       + "cluster's host: it signs you in for this browser tab."
                       + (config.why ? ` (${config.why})` : ""));
  }
  const me = await api("GET", "/whoami");
  view.user = me.user;
  view.manager = me.manager;
  $("who").textContent = `${me.user}${me.manager ? " (manager)" : ""}`;
  for (const label of document.querySelectorAll("#booking .managers")) label.hidden = !me.manager;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function returnAddress() { return location.origin + "/web/"; }

function offerProviderSignIn(oidc) {
  const button = $("provider-sign-in");
  button.hidden = false;
  button.onclick = async () => {
    const verifier = randomText(48), state = randomText(16);
    const challenge = base64url(await crypto.subtle.digest(
      "SHA-256", new TextEncoder().encode(verifier)));
    sessionStorage.setItem("plus.oidc", JSON.stringify({
      verifier, state, token_endpoint: oidc.token_endpoint, client_id: oidc.client_id,
      resource: oidc.resource}));
    const target = new URL(oidc.authorization_endpoint);
    target.search = new URLSearchParams({
      response_type: "code", client_id: oidc.client_id, redirect_uri: returnAddress(),
      scope: oidc.scope, state, resource: oidc.resource, code_challenge: challenge,
      code_challenge_method: "S256"});
    location.assign(target.toString());
  };
}

async function providerReturned(returned) {
  const saved = JSON.parse(sessionStorage.getItem("plus.oidc") || "null");
  sessionStorage.removeItem("plus.oidc");
  history.replaceState(null, "", location.pathname);
  if (returned.has("error")) {
    throw new ApiError(401, "The identity provider did not sign you in: "
                       + (returned.get("error_description") || returned.get("error")));
  }
  if (!saved || saved.state !== returned.get("state") || !returned.get("code")) {
    throw new ApiError(401, "This sign-in was not started from this page: sign in again.");
  }
  const response = await fetch(saved.token_endpoint, {
    method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: new URLSearchParams({
      grant_type: "authorization_code", code: returned.get("code"),
      redirect_uri: returnAddress(), client_id: saved.client_id,
      code_verifier: saved.verifier, resource: saved.resource})});
  const data = await response.json().catch(() => ({}));
  if (!response.ok || typeof data.access_token !== "string") {
    throw new ApiError(401, "The identity provider refused the sign-in: "
                       + (data.error_description || data.error || response.statusText));
  }
  sessionStorage.setItem("plus.token", data.access_token);
}

/* -- the calendar's data: ARs and jobs over a window, whole cluster -------------- */

async function load(start, end, force) {
  const since = !force && view.loaded && view.loaded.start === start && view.loaded.end === end
    ? `&since=${view.revision}` : "";
  const ticket = ++view.tickets;
  view.loading += 1;
  let data;
  try {
    data = await api("GET", `/calendar?start=${start}&end=${end}${since}`);
  } finally {
    view.loading -= 1;
  }
  if (ticket !== view.tickets) return;          // a later request's answer is the one to show
  view.jobs = data.jobs;
  if (!data.unchanged) {
    view.ars = data.ars;
    view.revision = data.revision;
    view.slots = data.slots || {};
    view.properties = data.properties || {};
    if (data.nodes.join("\n") !== view.nodes.join("\n")) view.nodes = data.nodes;
    listOwners();
    chooseNodes();
  }
  view.loaded = {start, end};
  draw();
}

function arNodes(row) { return row[6] ? row[6].split(",") : []; }

/* -- filters: rows by name, node property and one's own ARs; bars by owner
 *    and state (the legend's boxes) --------------------------------------------- */

function listOwners() {
  const select = $("owner-filter"), chosen = select.value;
  const owners = [...new Set([view.user, ...view.ars.map(row => row[2])])].sort();
  if (owners.join("\n") === [...select.options].slice(1).map(o => o.value).join("\n")) return;
  select.replaceChildren(new Option("everyone", ""), ...owners.map(o => new Option(o, o)));
  select.value = owners.includes(chosen) ? chosen : "";
}

/* A node's attribute as the daemon matches it: a property, or its name as
 * hostname (h), which every node has. */
function attribute(node, key) {
  const value = (view.properties[node] || {})[key];
  return value === undefined && HOST_NAME.includes(key) ? node : value;
}

/* "rack=1" (the value may hold * and ?, and | between alternatives), or
 * "gpu" for any value. */
function propertyTest(text) {
  const [name, ...rest] = text.split("=");
  const key = name.trim();
  if (!key) return () => true;
  if (!rest.length) return node => attribute(node, key) !== undefined;
  const pattern = new RegExp("^(?:" + rest.join("=").trim().split("|").map(
    alternative => alternative.replace(/[.+^${}()[\]\\]/g, "\\$&").replace(/\*/g, ".*")
      .replace(/\?/g, ".")).join("|") + ")$");
  return node => {
    const value = attribute(node, key);
    return value !== undefined && pattern.test(String(value));
  };
}

function filteredNodes() {
  const filter = $("filter").value.trim().toLowerCase();
  let nodes = view.nodes;
  if (filter) nodes = nodes.filter(n => n.toLowerCase().includes(filter));
  const property = $("property-filter").value.trim();
  if (property) nodes = nodes.filter(propertyTest(property));
  if ($("mine-only").checked) {
    const mine = new Set();
    for (const row of view.ars) if (row[2] === view.user) arNodes(row).forEach(n => mine.add(n));
    nodes = nodes.filter(n => mine.has(n));
  }
  return nodes;
}

function chooseNodes() {
  const nodes = filteredNodes();
  const pages = Math.max(1, Math.ceil(nodes.length / view.pageSize));
  view.page = Math.max(0, Math.min(view.page, pages - 1));
  const first = view.page * view.pageSize;
  const shown = nodes.slice(first, first + view.pageSize);
  $("node-page").textContent = nodes.length
    ? `${first + 1}–${first + shown.length} of ${nodes.length}` : "no nodes";
  $("previous-nodes").disabled = view.page === 0;
  $("next-nodes").disabled = view.page >= pages - 1;
  const rows = shown.map((name, order) => ({
    id: name, order, content: html(view.slots[name] > 1 ? `${name} · ${view.slots[name]}` : name),
    title: html(`${name}: ${view.slots[name] || 1} slot(s)`
                + Object.entries(view.properties[name] || {}).map(([k, v]) => `, ${k}=${v}`).join(""))}));
  const held = view.groups.get({returnType: "Object"});
  if (rows.length === Object.keys(held).length
      && rows.every(row => held[row.id] && held[row.id].order === row.order
                    && held[row.id].content === row.content && held[row.id].title === row.title)) return;
  view.groups.clear();
  view.groups.add(rows);
}

function shownAr(row) {
  const owner = $("owner-filter").value;
  return (!owner || row[2] === owner) && shownStates().has(row[3]);
}

function shownStates() {
  return new Set([...document.querySelectorAll("#legend input:checked")].map(box => box.dataset.state));
}

/* -- drawing: ARs sharing a node by slots are stacked (vis-timeline's stack),
 *    each its own bar ---------------------------------------------------------- */

function draw() {
  const rows = new Set(view.groups.getIds());
  const items = [];
  for (const row of view.ars) {
    if (!shownAr(row)) continue;
    const [id, name, owner, letter, start, end] = row;
    const mine = owner === view.user;
    const editable = (mine || view.manager) && (letter === "w" || letter === "r" || letter === "W")
      ? {updateTime: true, updateGroup: false, remove: false} : false;
    const label = `AR ${id}${name ? " " + name : ""} of ${owner}: ${STATE_WORDS[letter] || letter}, `
      + `${when(start)} to ${when(end)}`;
    for (const node of arNodes(row)) {
      if (!rows.has(node)) continue;
      items.push({
        id: `ar${id}@${node}`, group: node, ar: id, start: start * 1000, end: end * 1000,
        content: html(`#${id}${name ? " " + name : ""}`), editable, label: `${label}, on ${node}`,
        className: `ar state-${STATES[letter] || "waiting"}${mine ? " mine" : ""}`,
        title: html(label),
      });
    }
  }
  for (const [id, owner, kind, start, end, hosts] of view.jobs) {
    for (const host of hosts.split(",")) {
      if (!rows.has(host)) continue;
      items.push({
        id: `job${id}@${host}`, group: host, start: start * 1000, end: end * 1000, content: "",
        className: `job job-${kind}`, selectable: false, editable: false,
        title: html(`job ${id} of ${owner}: ${kind === "running" ? "running" : "reserved (-R y)"}`),
      });
    }
  }
  /* a booking's free starts on each node free then: from a start to the end of its booking */
  view.free = {};
  for (const node of rows) {
    view.free[node] = freeStarts(node);
    view.free[node].forEach(([low, high], i) => items.push({
      id: `free${i}@${node}`, group: node, start: low * 1000, end: (high + view.booking.seconds) * 1000,
      type: "background", className: "free", content: "",
    }));
  }
  /* Only what changed goes to vis-timeline: each item it is handed is laid
   * out again, and a scroll keeps most of them. */
  const held = view.items.get({returnType: "Object"});
  const wanted = new Set(items.map(item => item.id));
  view.items.remove(Object.keys(held).filter(id => !wanted.has(id)));
  view.items.update(items.filter(item => !same(held[item.id], item)));
}

/* Stacked in a row: live ARs on top, then jobs, then ended and cancelled
 * ARs (drawn thin), each by start. */
function stackOrder(a, b) {
  const rank = item => item.ar === undefined ? 1 : item.className.includes("state-exited")
    || item.className.includes("state-deleted") ? 2 : 0;
  return rank(a) - rank(b) || a.start - b.start;
}

function same(old, item) {
  return old !== undefined && old.start === item.start && old.end === item.end
    && old.className === item.className && old.content === item.content && old.label === item.label
    && old.title === item.title && JSON.stringify(old.editable) === JSON.stringify(item.editable);
}

/* Every AR bar drawn is a button for the keyboard and screen readers:
 * Tab reaches it, Enter or Space opens it (vis-timeline draws plain divs). */
function describeBars() {
  for (const item of Object.values(view.timeline.itemSet.items)) {
    const box = item.dom && item.dom.box;
    if (!box || item.data.ar === undefined || box.getAttribute("aria-label") === item.data.label) continue;
    box.dataset.ar = item.data.ar;
    box.tabIndex = 0;
    box.setAttribute("role", "button");
    box.setAttribute("aria-label", item.data.label);
  }
}

function barKey(event) {
  const {ar, node} = event.target.dataset || {};
  if ((!ar && !node) || (event.key !== "Enter" && event.key !== " ")) return;
  event.preventDefault();
  if (node) chooseNode(node);
  else showDetail(Number(ar)).catch(error => say(error.message));
}

function visibleWindow() {
  const range = view.timeline.getWindow();
  return [Math.floor(range.start.valueOf() / 1000), Math.ceil(range.end.valueOf() / 1000)];
}

/* The loaded window: first the visible one with as much again on each
 * side, asked for as soon as the view leaves what is loaded or asked for
 * (on vis-timeline's "rangechange": its "rangechanged" comes 200 ms late);
 * then, once the view has rested a moment, a week more on each side, so
 * that the next scroll of up to a week finds its ARs drawn already. */
function follow() {
  const [start, end] = visibleWindow();
  const span = end - start;
  const covers = window => window && window.start <= start && window.end >= end;
  if (!covers(view.loaded) && !covers(view.asked)) {
    const asked = {start: start - span, end: end + span};
    view.asked = asked;
    load(asked.start, asked.end, true)
      .catch(error => say(error.message))
      .finally(() => { if (view.asked === asked) view.asked = null; });
  }
  clearTimeout(view.widening);
  view.widening = setTimeout(widen, WIDEN_AFTER_MS);
}

function widen() {
  const [start, end] = visibleWindow();
  const low = start - WEEK, high = end + WEEK;
  if (view.loaded && view.loaded.start <= low && view.loaded.end >= high) return;
  load(low, high, true).catch(error => say(error.message));
}

/* -- an AR's detail, its link (#ar=<id>), changing its window ------------------- */

async function showDetail(arId) {
  const ar = await api("GET", `/reservations/${arId}`);
  view.shown = ar;
  $("detail-title").textContent = `AR ${ar.id}${ar.name ? " (" + ar.name + ")" : ""}`;
  const fields = [
    ["owner", ar.owner], ["group", ar.group], ["state", STATE_WORDS[ar.state] || ar.state],
    ["start", when(ar.start)], ["end", when(ar.end)], ["duration", length(ar.duration)],
    ["nodes", ar.allocations.map(a => a.node + (a.queue ? ` (${a.queue}, ${a.slots} slots)`
                                                 : ` (${a.slots} slots)`)).join(", ")],
    ["users", ar.acl.join(", ")],
    /* a held AR takes no job yet: how to use it would mislead */
    ar.state === "h" ? ["jobs", "none yet: it awaits a manager's approval"]
                     : ["submit jobs with", ar.submit_hint],
  ];
  if (ar.message) fields.push(["message", ar.message]);
  if (ar.pending) fields.push(["pending", `${ar.pending.operation}, until ${when(ar.pending.expires)}`]);
  if (ar.approval) fields.push(["approval", `awaited until ${when(ar.approval.due)}, then it lapses`]);
  const list = $("detail-fields");
  list.replaceChildren();
  for (const [term, value] of fields) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    list.append(dt, dd);
  }
  const ownerActions = (ar.owner === view.user || view.manager) && "wrWE".includes(ar.state);
  $("detail-owner-actions").hidden = !ownerActions;
  $("cancel-ar").hidden = Boolean(ar.pending);
  $("cancel-confirm").hidden = true;
  const open = "rE".includes(ar.state) && !ar.pending;
  $("end-now").hidden = !open;
  $("end-now-text").hidden = !open;
  $("detail-decision").hidden = !(view.manager && ar.state === "h");
  $("deny-reason").value = "";
  $("edit-start").value = zoneInput(ar.start);
  $("edit-end").value = zoneInput(ar.end);
  $("detail-link").href = `#ar=${ar.id}`;
  await showArUsage(ar);
  $("detail").hidden = false;
  $("detail").dataset.ar = ar.id;
  if (location.hash !== `#ar=${ar.id}`) history.replaceState(null, "", `#ar=${ar.id}`);
  return ar;
}

function closeDetail() {
  $("detail").hidden = true;
  view.shown = null;
  hideArUsage();
  history.replaceState(null, "", location.pathname + location.search);
}

/* Open an AR: its detail, the timeline moved to its window and its first
 * node's row brought into the page of rows. */
async function openAr(arId) {
  const ar = await showDetail(arId);
  const [start, end] = visibleWindow();
  if (ar.end * 1000 < start * 1000 || ar.start > end) {
    view.timeline.moveTo(new Date((ar.start + Math.min(ar.end - ar.start, end - start) / 2) * 1000),
                         {animation: false});
  }
  const node = ar.allocations.length ? ar.allocations[0].node : null;
  const index = node === null ? -1 : filteredNodes().indexOf(node);
  if (index >= 0 && Math.floor(index / view.pageSize) !== view.page) {
    view.page = Math.floor(index / view.pageSize);
    chooseNodes();
    draw();
  }
  $("detail-title").focus();
}

function linked() {
  const found = /^#ar=(\d{1,7})$/.exec(location.hash);
  return found ? Number(found[1]) : null;
}

async function openLinked() {
  const arId = linked() || Number(sessionStorage.getItem("plus.open")) || null;
  sessionStorage.removeItem("plus.open");
  if (arId === null) return;
  try { await openAr(arId); } catch (error) { say(`AR ${arId}: ${error.message}`); }
}

/* A dragged end snaps to the minute; the end not dragged keeps its second. */
function dragged(now, before) {
  return now.valueOf() === before ? before / 1000 : Math.round(now.valueOf() / 60000) * 60;
}

async function moved(item, callback) {
  const before = view.items.get(item.id);
  const start = dragged(item.start, before.start), end = dragged(item.end, before.end);
  if (await changeWindow(item.ar, start, end)) callback(item);
  else callback(null);
}

/* The owner's keyboard way to what a drag does; a field not changed keeps its second. */
async function windowTyped() {
  const ar = view.shown;
  const typed = id => $(id).value === zoneInput(id === "edit-start" ? ar.start : ar.end)
    ? (id === "edit-start" ? ar.start : ar.end) : zoneTime($(id).value);
  const start = typed("edit-start"), end = typed("edit-end");
  if (start === null || end === null) {
    say("Give the start and the end as a date and a time (in the zone shown above).");
    return;
  }
  await changeWindow(ar.id, start, end);
}

async function changeWindow(arId, start, end) {
  let changed = false;
  try {
    await api("PATCH", `/reservations/${arId}`, {start, end});
    changed = true;
    if (!$("detail").hidden && $("detail").dataset.ar === String(arId)) await showDetail(arId);
    say(`AR ${arId} now runs from ${when(start)} to ${when(end)}.`, true);
  } catch (error) {
    say(`AR ${arId} was not changed: ${error.message}`);
  }
  await refresh(true);
  return changed;
}

/* -- a manager's decision on an AR awaiting approval (state h): approve, or
 *    deny with a reason for its owner ---------------------------------------- */

async function decide(verdict) {
  const arId = view.shown.id;
  const body = verdict === "deny" ? {reason: $("deny-reason").value.trim()} : undefined;
  try {
    const ar = await api("POST", `/reservations/${arId}/${verdict}`, body);
    say(`AR ${arId} ${verdict === "approve" ? "approved" : "denied"} (state ${ar.state}).`, true);
    await showDetail(arId);
  } catch (error) { say(`AR ${arId} was not ${verdict === "approve" ? "approved" : "denied"}: ${error.message}`); }
  await refresh(true);
}

/* -- cancelling: confirmed first; a waiting AR's cancel can be undone for a
 *    few seconds. It is a two-phase cancel (-T): the store marks the AR as
 *    being cancelled at once, for every daemon and plus_status, while its
 *    nodes stay held, so that Undo (an abort) gives it back exactly as it
 *    was, and nobody can take its nodes meanwhile; once the seconds are up
 *    the page commits. A tab closed meanwhile commits as it goes (pagehide),
 *    and if even that is lost the daemon aborts at commit_timeout: the AR
 *    stays, the side a user can see and put right. ------------------------------ */

function askCancel() {
  const ar = view.shown;
  const undoable = ar.state === "w" && ar.start - Date.now() / 1000 > UNDO_SECONDS + COMMIT_MARGIN;
  $("cancel-confirm-text").textContent = undoable
    ? `Cancel AR ${ar.id}? You can undo it for ${UNDO_SECONDS} seconds.`
    : `Cancel AR ${ar.id}? It has started: jobs in it are stopped, and this cannot be undone.`;
  $("cancel-confirm").hidden = false;
  $("cancel-confirm").dataset.undoable = undoable ? "yes" : "no";
  $("cancel-no").focus();
}

async function cancelConfirmed() {
  const arId = view.shown.id, undoable = $("cancel-confirm").dataset.undoable === "yes";
  $("cancel-confirm").hidden = true;
  try {
    if (!undoable) {
      await api("POST", `/reservations/${arId}/cancel`);
      say(`AR ${arId} cancelled.`, true);
      closeDetail();
    } else {
      const held = await api("POST", `/reservations/${arId}/cancel?transactional=true`);
      const allowed = held.pending.expires - held.pending.since - COMMIT_MARGIN;
      offerUndo(arId, Math.max(1, Math.min(UNDO_SECONDS, allowed)));
      await showDetail(arId);
    }
  } catch (error) { say(error.message); }
  await refresh(true);
}

function offerUndo(arId, seconds) {
  const due = Date.now() + seconds * 1000;
  const tell = () => {
    $("undo-text").textContent = `AR ${arId} will be cancelled in `
      + `${Math.max(0, Math.ceil((due - Date.now()) / 1000))} s.`;
  };
  tell();
  view.undo = {ar: arId, commit: setTimeout(commitCancel, seconds * 1000),
               tick: setInterval(tell, 1000)};
  say("");
  $("undo").hidden = false;
  $("undo-button").focus();
}

function endUndo() {
  const undo = view.undo;
  view.undo = null;
  clearTimeout(undo.commit);
  clearInterval(undo.tick);
  $("undo").hidden = true;
  return undo.ar;
}

async function commitCancel() {
  const arId = endUndo();
  try {
    await api("POST", `/reservations/${arId}/commit`);
    say(`AR ${arId} cancelled.`, true);
    if (view.shown && view.shown.id === arId) closeDetail();
  } catch (error) { say(`AR ${arId} was not cancelled: ${error.message}`); }
  await refresh(true);
}

/* -- ending an open AR now: released early, its nodes freed, charged until now */
async function endNow() {
  const arId = view.shown.id;
  try {
    await api("POST", `/reservations/${arId}/release`);
    say(`AR ${arId} ended: its nodes are free.`, true);
    if (view.shown && view.shown.id === arId) closeDetail();
  } catch (error) { say(`AR ${arId} was not ended: ${error.message}`); }
  await refresh(true);
}

async function undoCancel() {
  if (!view.undo) return;
  const arId = endUndo();
  try {
    await api("POST", `/reservations/${arId}/abort`);
    say(`AR ${arId} is kept: its cancel was undone.`, true);
    if (view.shown && view.shown.id === arId) await showDetail(arId);
  } catch (error) { say(`AR ${arId}: the cancel could not be undone: ${error.message}`); }
  await refresh(true);
}

/* The tab goes away with a cancel waiting: the user asked for it, so it is
 * committed (keepalive: the request outlives the page). */
function leaving() {
  if (!view.undo) return;
  const arId = endUndo();
  fetch(`${API}/reservations/${arId}/commit`, {method: "POST", headers: headers(), keepalive: true});
}

/* -- booking: RESQUERY's ranges shaded on each node free then, a click books
 *    there (SETRES) ---------------------------------------------------------------- */

/* The booking's ResourceList items. The daemon checks each value and says
 * what it accepts; the page only keeps ';' out, which would start an item of
 * its own. */
function bookingShape() {
  const nodes = parseInt($("book-nodes").value, 10);
  const seconds = Math.round(parseFloat($("book-hours").value) * HOUR);
  if (!(nodes >= 1) || !(seconds >= 60)) {
    throw new ApiError(400, "Give a number of nodes (1 or more) and a duration of at least "
                       + "a minute (0.1 hours = 6 minutes).");
  }
  const items = [`nodes=${nodes}`];
  const field = (id, what) => {
    const value = $(id).value.trim();
    if (value.includes(";")) throw new ApiError(400, `${what}: ';' is not accepted here.`);
    return value;
  };
  const slots = field("book-slots", "Slots per node");
  if (slots) items.push(`ppn=${slots}`);
  const properties = field("book-properties", "Properties").split(/[\s,]+/).filter(Boolean);
  for (const property of properties) {
    if (!/^[^=]+=[^=]+$/.test(property)) {
      throw new ApiError(400, `Properties: "${property}" is not name=value (such as rack=1); `
                         + "separate several with spaces.");
    }
    items.push(property);
  }
  const fits = node => (!slots || (view.slots[node] || 1) >= Number(slots))
    && properties.every(property => propertyTest(property)(node));
  const named = properties.map(p => p.split("=")).filter(([key]) => HOST_NAME.includes(key));
  const host = named.length === 1 && /^[^*?[|]+$/.test(named[0][1]) ? named[0][1] : null;
  const users = field("book-users", "Users").split(/[\s,]+/).filter(Boolean);
  if (users.length) items.push(`users=${users.join(",")}`);
  const name = field("book-name", "Name");
  if (name) items.push(`name=${name}`);
  const attributes = properties.map(p => p.split("="));
  return {nodes, seconds, resources: items.join(";"), name, fits, host, attributes, users,
          slots: slots ? Number(slots) : null};
}

/* A click on a node's name (or Enter on it) books there: the form asks
 * for one node by name (hostname=, which every backend matches) and its
 * free starts are shaded. */
function chooseNode(node) {
  const kept = $("book-properties").value.split(/[\s,]+/)
    .filter(p => p && !HOST_NAME.includes(p.split("=")[0]));
  $("book-properties").value = [...kept, `hostname=${node}`].join(" ");
  $("book-nodes").value = "1";
  findFree();
}

/* Each node's name in the rows is a button for the keyboard and screen
 * readers, as the bars are. */
function describeRows() {
  for (const [node, group] of Object.entries(view.timeline.itemSet.groups)) {
    const label = group.dom && group.dom.label;
    if (!label || label.dataset.node === node || view.groups.get(node) === null) continue;
    label.dataset.node = node;
    label.tabIndex = 0;
    label.setAttribute("role", "button");
    label.setAttribute("aria-label", `${node}: book this node`);
  }
}

/* ``refusal``: the SETRES refusal that made the spans stale, said again
 * above the fresh ones. */
async function findFree(refusal) {
  try {
    const shape = bookingShape();
    const [start, end] = visibleWindow();
    const now = Math.ceil(Date.now() / 60000) * 60;
    const answer = await api("POST", "/ggf/resquery", {
      UserID: view.user, TimeNeeded: `${shape.seconds}s`,
      TimeSpec: `${Math.max(start, now)},${Math.max(end, now + 60)}`,
      ResourceList: shape.resources});
    view.booking = shape;
    view.starts = answer.ranges.map(r => [r.STime, r.EndSTime]);
    $("booking-hint").textContent = view.starts.length
      ? `Click in a shaded span (or choose a start here) to book ${shape.nodes} node(s) for `
        + `${length(shape.seconds)} from there:`
      : "No start in this window: scroll on or ask for less.";
    $("free-list").replaceChildren(...view.starts.slice(0, LISTED_STARTS).map(([low]) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `from ${when(low)}`;
      button.addEventListener("click", () => offerBooking(low));
      return button;
    }));
    say(refusal || "");
    draw();
  } catch (error) { say(error.message); }
}

/* The spans of RESQUERY's starts at which ``node``, if it has the slots
 * and properties asked for, holds no live AR and no job for the booking's
 * length: where a booking could start with it. The daemon chooses the
 * nodes unless the booking names one (hostname=: a click on a node's name,
 * or in its row for a booking of one node). */
function freeStarts(node) {
  if (!view.booking || !view.starts.length || !view.booking.fits(node)) return [];
  const busy = [];
  for (const row of view.ars) {
    if (LIVE.includes(row[3]) && arNodes(row).includes(node)) busy.push([row[4], row[5]]);
  }
  for (const job of view.jobs) if (job[5].split(",").includes(node)) busy.push([job[3], job[4]]);
  let spans = view.starts.map(([low, high]) => [low, high]);
  for (const [from, to] of busy) {
    const blockedLow = from - view.booking.seconds, blockedHigh = to;
    spans = spans.flatMap(([low, high]) => {
      if (blockedHigh <= low || blockedLow >= high) return [[low, high]];
      const kept = [];
      if (blockedLow >= low) kept.push([low, blockedLow]);
      if (blockedHigh <= high) kept.push([blockedHigh, high]);
      return kept;
    });
  }
  return spans;
}

/* The start for a click at ``seconds`` among ``spans``: there, or the
 * latest start of the span the click falls in when the booking would run
 * past its end. */
function startAt(seconds, spans) {
  for (const [low, high] of spans) {
    const start = Math.min(Math.max(low, Math.round(seconds / 60) * 60), high);
    if (seconds >= low && seconds <= high + view.booking.seconds) return start;
  }
  return null;
}

function offerBooking(seconds, node) {
  if (!view.booking) return;
  const start = startAt(seconds, node ? view.free[node] || [] : view.starts);
  if (start === null) return;
  view.pendingStart = start;
  view.pendingHost = view.booking.host || (node && view.booking.nodes === 1 ? node : null);
  const on = view.pendingHost ? ` on ${view.pendingHost}` : "";
  const note = !on && node ? ` (${node} is free then; the daemon chooses the nodes)` : "";
  $("confirm-text").textContent = `Book ${view.booking.nodes} node(s)${on} from ${when(start)} to `
    + `${when(start + view.booking.seconds)}${view.booking.name ? " as " + view.booking.name : ""}?${note}`;
  $("confirm").hidden = false;
  $("book").focus();
}

/* A manager's maintenance booking (POST /reservations with maint, and
 * force to take nodes other ARs hold): busy and down nodes too. */
async function bookMaintenance(shape, start, host) {
  const attributes = shape.attributes.concat(host && !shape.host ? [["hostname", host]] : []);
  const answer = await api("POST", "/reservations", {
    start, end: start + shape.seconds, nodes: shape.nodes, attributes, users: shape.users,
    name: shape.name, maint: true, force: $("book-force").checked,
    ...(shape.slots ? {slots_per_node: shape.slots} : {})});
  say(`Booked for maintenance: AR ${answer.id} from ${when(start)}.`, true);
}

async function book() {
  const shape = view.booking, start = view.pendingStart, host = view.pendingHost;
  $("confirm").hidden = true;
  if (view.manager && $("book-maint").checked) {
    try {
      await bookMaintenance(shape, start, host);
      view.starts = [];
      $("free-list").replaceChildren();
      await refresh(true);
    } catch (error) {
      await findFree(`Not booked: ${error.message}`);
    }
    return;
  }
  try {
    const answer = await api("POST", "/ggf/setres", {
      UserID: view.user, TimeNeeded: `${shape.seconds}s`, StartTime: String(start),
      ResourceList: shape.resources + (host && !shape.host ? `;hostname=${host}` : "")});
    view.starts = [];
    $("booking-hint").textContent = "";
    $("free-list").replaceChildren();
    say(`Booked: AR ${answer.reservation.id} from ${when(start)}. Its ResKey, shown this once: `
        + answer.ResKey, true);
    await refresh(true);
  } catch (error) {
    await findFree(`Not booked: ${error.message}`);
  }
}

/* -- search: an AR by id (anywhere), or by name among those loaded ------------- */

async function search(event) {
  event.preventDefault();
  const text = $("search").value.trim();
  const results = $("search-results");
  results.hidden = true;
  if (!text) return;
  if (/^\d{1,7}$/.test(text)) {
    try { await openAr(Number(text)); } catch (error) { say(error.message); }
    return;
  }
  const needle = text.toLowerCase();
  const found = view.ars.filter(row => row[1] && row[1].toLowerCase().includes(needle));
  if (found.length === 1) {
    await openAr(found[0][0]).catch(error => say(error.message));
  } else if (!found.length) {
    say(`No AR whose name holds "${text}" from ${when(view.loaded.start)} to ${when(view.loaded.end)}.`);
  } else {
    results.replaceChildren(`${found.length} ARs match: `, ...found.slice(0, LISTED_FOUND).map(row => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `#${row[0]} ${row[1]} (${STATE_WORDS[row[3]] || row[3]})`;
      button.addEventListener("click", () => openAr(row[0]).catch(error => say(error.message)));
      return button;
    }));
    results.hidden = false;
  }
}

/* -- usage: reserved against used node-hours per day ----------------------------- */

function dayKey(date) {
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}-`
    + String(date.getDate()).padStart(2, "0");
}

/* Node-hours of spans [owner, from, to, nodes] per local day, for ``owner``. */
function perDay(spans, owner, first, last) {
  const days = new Map();
  for (const {owner: who, start: from, end: to, nodes} of spans) {
    if (owner && who !== owner) continue;
    let t = Math.max(from, first);
    const stop = Math.min(to, last);
    while (t < stop) {
      const day = new Date(t * 1000);
      const next = new Date(day.getFullYear(), day.getMonth(), day.getDate() + 1).valueOf() / 1000;
      const piece = Math.min(next, stop) - t;
      const key = dayKey(day);
      days.set(key, (days.get(key) || 0) + piece * nodes / HOUR);
      t = Math.min(next, stop);
    }
  }
  return days;
}

async function showUsage() {
  try {
    const first = new Date($("usage-from").value + "T00:00").valueOf() / 1000;
    const last = new Date($("usage-to").value + "T00:00").valueOf() / 1000 + 86400;
    if (!(last > first)) throw new ApiError(400, "Choose a period whose end is on or after its start.");
    const data = await api("GET", `/usage?start=${first}&end=${Math.min(last, Date.now() / 1000 | 0)}`);
    const owners = [...new Set([...data.reserved, ...data.used].map(s => s.owner))].sort();
    const select = $("usage-owner");
    const chosen = select.value || view.user;
    select.replaceChildren(new Option("everyone", ""), ...owners.map(o => new Option(o, o)));
    select.value = owners.includes(chosen) || chosen === "" ? chosen : "";
    const owner = select.value;
    const reserved = perDay(data.reserved, owner, first, last);
    const used = perDay(data.used, owner, first, last);
    const points = [];                     /* each day's bars at its noon, inside the day */
    for (const [key, value] of reserved) points.push({x: `${key}T12:00`, y: +value.toFixed(4), group: "reserved"});
    for (const [key, value] of used) points.push({x: `${key}T12:00`, y: +value.toFixed(4), group: "used"});
    const groups = new vis.DataSet([{id: "reserved", content: "reserved node-hours"},
                                    {id: "used", content: "used node-hours (jobs in ARs)"}]);
    const options = {style: "bar", barChart: {width: 40, align: "center", sideBySide: true},
                     drawPoints: false, legend: true, orientation: "top",
                     start: new Date(first * 1000), end: new Date(last * 1000),
                     dataAxis: {left: {title: {text: "node-hours"}}}};
    if (view.usageChart) view.usageChart.destroy();
    view.usageChart = new vis.Graph2d($("usage-chart"), new vis.DataSet(points), groups, options);
    view.usageChart.dom.root.dataset.points = JSON.stringify(points);
  } catch (error) { say(error.message); }
}

/* -- an AR's usage while it runs: node-hours reserved against used so far
 *    (GET /usage/{id}, for its owner, its users and managers), read again
 *    when an event names the AR and carried on each second in between at
 *    the rates the answer gives (its nodes, and those running its jobs) -- */

async function showArUsage(ar) {
  hideArUsage();
  if (!IN_WINDOW.includes(ar.state)) return;
  let answer;
  try {
    answer = await api("GET", `/usage/${ar.id}`);
  } catch (error) {
    if (error.status === 403 || error.status === 400) return;   /* not theirs, or no longer running */
    throw error;
  }
  view.arUsage = {answer, tick: setInterval(drawArUsage, 1000)};
  $("ar-usage").dataset.asked = String(Number($("ar-usage").dataset.asked || 0) + 1);
  drawArUsage();
  $("ar-usage").hidden = false;
}

function hideArUsage() {
  if (view.arUsage) clearInterval(view.arUsage.tick);
  view.arUsage = null;
  $("ar-usage").hidden = true;
}

function drawArUsage() {
  const a = view.arUsage.answer;
  const now = Math.max(a.now, Math.min(Date.now() / 1000, a.end));
  const reserved = a.reserved + a.nodes * (now - a.now), used = a.used + a.busy * (now - a.now);
  const hours = seconds => `${length(seconds)}:${String(Math.floor(seconds % 60)).padStart(2, "0")}`;
  const share = reserved > 0 ? Math.min(100, 100 * used / reserved) : 0;
  const box = $("ar-usage");
  box.dataset.reserved = String(Math.round(reserved));
  box.dataset.used = String(Math.round(used));
  $("ar-usage-reserved").textContent = `reserved ${hours(reserved)}`;
  $("ar-usage-used").textContent = `used ${hours(used)}`;
  box.querySelector(".used").style.width = `${share}%`;
  $("ar-usage-chart").setAttribute("aria-label", `node time ${hours(reserved)} reserved, `
                                   + `${hours(used)} used (${Math.round(share)}%)`);
  $("ar-usage-text").textContent = `${Math.round(share)}% used; ${a.busy} of ${a.nodes} `
    + `node(s) running its jobs now.`;
}

/* -- the page ------------------------------------------------------------------- */

async function refresh(force) {
  const [start, end] = visibleWindow();
  const span = end - start;
  if (force || !view.loaded) await load(start - span, end + span, true);
  else await load(view.loaded.start, view.loaded.end, false);
}

/* How the page learns of changes: the API's event stream (live.js), which
 * tells of other users' ARs too (calendar=true: their ids only). Events
 * that come together cost one reload (the first schedules it SETTLE_MS
 * ahead, the others join it), which asks only whether an AR changed; an
 * open detail is read again if its AR was named. A daemon without the
 * stream (404, 501) is polled every POLL_MS instead. */
function watchChanges() {
  view.live = liveEvents(`${API}/events?calendar=true`, headers, changed, liveState);
}

function changed(type, data) {
  if (type === "refused") return;              /* the stream ends, and is opened again */
  if (type === "gap") view.stale = true;       /* events were missed: load afresh */
  const ar = data.reservation && data.reservation.id;
  if (ar !== undefined) view.touched.add(ar);
  if (view.settling === null) view.settling = setTimeout(reloadChanged, SETTLE_MS);
}

async function reloadChanged() {
  const touched = view.touched, stale = view.stale;
  view.settling = null;
  view.touched = new Set();
  view.stale = false;
  view.reloads += 1;
  try {
    await refresh(stale);
    if (view.shown && touched.has(view.shown.id)) await showDetail(view.shown.id);
  } catch (error) { say(error.message); }
}

function liveState(state, detail) {
  const box = $("live");
  box.dataset.state = state;
  if (state === "live") {
    box.textContent = "Live";
    if (!detail) changed("opened", {});      /* what changed before the stream began */
  } else if (state === "lost") {
    box.textContent = `Live updates lost: trying again in ${detail} s`;
  } else if (state === "refused") {
    box.textContent = `Updated every ${POLL_MS / 1000} s (this daemon has no event stream)`;
    setInterval(() => refresh(false).catch(error => say(error.message)), POLL_MS);
  } else {
    box.textContent = "Live updates stopped: sign in again";
  }
}

function zoom(seconds) {
  const [start, end] = visibleWindow();
  const middle = (start + end) / 2;
  view.timeline.setWindow((middle - seconds / 2) * 1000, (middle + seconds / 2) * 1000,
                          {animation: false});
}

function rows() { view.page = Math.max(0, view.page); chooseNodes(); draw(); }

function wire() {
  document.querySelectorAll("[data-zoom]").forEach(button =>
    button.addEventListener("click", () => zoom(Number(button.dataset.zoom))));
  $("now").addEventListener("click", () => view.timeline.moveTo(new Date(), {animation: false}));
  $("filter").addEventListener("input", () => { view.page = 0; rows(); });
  $("property-filter").addEventListener("input", () => { view.page = 0; rows(); });
  $("mine-only").addEventListener("change", () => { view.page = 0; rows(); });
  $("previous-nodes").addEventListener("click", () => { view.page -= 1; rows(); });
  $("next-nodes").addEventListener("click", () => { view.page += 1; rows(); });
  $("owner-filter").addEventListener("change", draw);
  $("legend").addEventListener("change", draw);
  $("search-form").addEventListener("submit", search);
  $("zone").addEventListener("change", () => chooseZone($("zone").value));
  $("find").addEventListener("click", () => findFree());
  $("book").addEventListener("click", book);
  $("book-cancel").addEventListener("click", () => { $("confirm").hidden = true; });
  $("end-now").addEventListener("click", endNow);
  $("cancel-ar").addEventListener("click", askCancel);
  $("approve-ar").addEventListener("click", () => decide("approve"));
  $("deny-ar").addEventListener("click", () => decide("deny"));
  $("cancel-yes").addEventListener("click", cancelConfirmed);
  $("cancel-no").addEventListener("click", () => { $("cancel-confirm").hidden = true; });
  $("undo-button").addEventListener("click", undoCancel);
  $("edit-window").addEventListener("click", windowTyped);
  $("detail-close").addEventListener("click", closeDetail);
  $("usage-show").addEventListener("click", showUsage);
  $("timeline").addEventListener("keydown", barKey);
  window.addEventListener("hashchange", openLinked);
  window.addEventListener("pagehide", leaving);
  view.timeline.on("rangechange", follow);
  view.timeline.on("changed", () => { describeBars(); describeRows(); });
  view.timeline.on("click", props => {
    if (props.item && props.item.startsWith("ar")) {
      showDetail(view.items.get(props.item).ar).catch(error => say(error.message));
    } else if (props.what === "group-label" && props.group !== null) {
      chooseNode(props.group);
    } else if (props.time && view.booking) {
      offerBooking(props.time.valueOf() / 1000, props.group);
    }
  });
}

async function start() {
  view.config = await fetch("/web/config").then(r => r.json()).catch(() => ({}));
  const saved = localStorage.getItem("plus.zone");
  $("zone").replaceChildren(...zones());
  view.zone = [saved, view.config.timezone, "UTC"].find(
    zone => zone && [...$("zone").options].some(option => option.value === zone));
  $("zone").value = view.zone;
  if (linked() !== null) sessionStorage.setItem("plus.open", String(linked()));
  try {
    await login();
  } catch (error) {
    say(error.message);
    return;
  }
  const now = Date.now(), phone = window.innerWidth <= 640;
  view.pageSize = Math.max(10, Math.floor((window.innerHeight - 260) / ROW_PX));
  view.items = new vis.DataSet();
  view.groups = new vis.DataSet();
  view.timeline = new vis.Timeline($("timeline"), view.items, view.groups, {
    zoomMin: HOUR * 1000, zoomMax: 62 * 86400 * 1000, stack: true,
    showCurrentTime: true, orientation: "top", moment: zoned,
    editable: {updateTime: true, updateGroup: false, add: false, remove: false},
    onMove: moved, snap: date => new Date(Math.round(date.valueOf() / 60000) * 60000),
    tooltip: {followMouse: true}, margin: {item: {vertical: 4, horizontal: 0}},
    groupHeightMode: "auto", order: stackOrder,
  });
  /* Set after creation: vis-timeline shows itself once a range change is done.
   * A phone shows 3 hours, so that a bar of an hour is wide enough to read. */
  const [before, after] = phone ? [0.5, 2.5] : [6, 18];
  view.timeline.setWindow(now - before * HOUR * 1000, now + after * HOUR * 1000, {animation: false});
  const today = new Date();
  $("usage-to").value = dayKey(today);
  $("usage-from").value = dayKey(new Date(today.valueOf() - 13 * 86400000));
  wire();
  try {
    await refresh(true);
    await openLinked();
    document.body.dataset.ready = "yes";
    view.widening = setTimeout(widen, WIDEN_AFTER_MS);
  } catch (error) { say(error.message); }
  watchChanges();
}

document.addEventListener("DOMContentLoaded", start);
