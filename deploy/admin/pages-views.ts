/**
 * The admin pages' browser code, part 2: a workspace's destinations with their health, and its
 * deletion requests (regulations). Runs in the browser under the rules of pages-app.ts (its
 * module comment): only parameters, browser globals, this file's functions and `K`; every value
 * the API answers is put in the page as text.
 */
import type { ListedDestination } from "../commands/destinations";
import type { AddedDestination, RegulationList } from "./openapi";
import type { RegulationRecord } from "../../schemas/admin/records";
import type { Ev, Kit, VNode } from "./pages-app";

declare const K: Kit;

/** GET .../destinations/{id}/health (deploy/admin/routes-health.ts), as the pages read it. */
export interface DestinationHealth {
  destinationId: string;
  /** Messages of the events topic the destination's consumer group has not passed. */
  waiting: number;
  oldestWaitingSeconds: number | null;
  /** Last 15 minutes, from the delivery processes' reports. */
  delivered: number;
  retried: number;
  failed: number;
  failuresKept: number;
  /** null: no delivery process reported. */
  reportedAt: string | null;
}

/** A duration in seconds as `42 s`, `7 min`, `3 h`, `2 d`. Pure. */
export function age(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3_600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/** A destination's health as one line of text; "health unknown" without the route (404). Pure. */
export function healthText(status: number, health: DestinationHealth | undefined): string {
  if (status === 404 || health === undefined) return "health unknown";
  const waiting = `${health.waiting} waiting${health.oldestWaitingSeconds === null || health.waiting === 0 ? "" : ` (oldest ${age(health.oldestWaitingSeconds)})`}`;
  const reported =
    health.reportedAt === null ? "no delivery process reported" : `reported ${health.reportedAt.slice(0, 19).replace("T", " ")}`;
  return `delivered ${health.delivered} · retried ${health.retried} · failed ${health.failed} (last 15 min) · ${waiting} · ${health.failuresKept} failures kept · ${reported}`;
}

/** A destination's health, read again every 5 s. */
export function HealthLine({ ws, id }: { ws: string; id: string }): VNode {
  const { answer } = K.useLoad(`/admin/v1/workspaces/${encodeURIComponent(ws)}/destinations/${encodeURIComponent(id)}/health`, 5_000);
  if (answer === undefined) return K.html`<span class="health muted">health: loading…</span>`;
  if (answer.status !== 200 && answer.status !== 404) return K.html`<span class="health error">${K.errorText(answer)}</span>`;
  const health = answer.status === 200 ? (answer.body as DestinationHealth) : undefined;
  const failing = health !== undefined && (health.failed > 0 || health.failuresKept > 0);
  return K.html`<span class=${failing ? "health failing" : "health"}>${healthText(answer.status, health)}</span>`;
}

/** The form that adds a webhook destination (a generated secret is shown once). */
export function AddDestination({ ws, onAdded }: { ws: string; onAdded: () => void }): VNode {
  const [url, setUrl] = K.useState("");
  const [name, setName] = K.useState("");
  const [secret, setSecret] = K.useState(false);
  const [error, setError] = K.useState("");
  const [added, setAdded] = K.useState<AddedDestination | undefined>(undefined);
  const submit = async (e: Ev) => {
    e.preventDefault();
    const body = { url: url.trim(), ...(name.trim() ? { name: name.trim() } : {}), ...(secret ? { secret: true } : {}) };
    const got = await K.api("POST", `/admin/v1/workspaces/${encodeURIComponent(ws)}/destinations`, body);
    setError(got.status === 201 ? "" : K.errorText(got));
    if (got.status !== 201) return;
    setAdded(got.body as AddedDestination);
    setUrl("");
    onAdded();
  };
  return K.html`<form id="add-destination" class="card" onSubmit=${submit}>
    <label>URL <input id="destination-url" type="url" required value=${url} onInput=${(e: Ev) => setUrl(e.currentTarget.value)} /></label>
    <label>Name <input id="destination-name" placeholder="Webhooks" value=${name} onInput=${(e: Ev) => setName(e.currentTarget.value)} /></label>
    <label><input type="checkbox" checked=${secret} onChange=${(e: Ev) => setSecret(e.currentTarget.checked)} /> sign with a new secret</label>
    <button class="primary" type="submit">Add a destination</button>
    ${error && K.html`<p class="error">${error}</p>`}
    ${
      added &&
      K.html`<p class="once">Added <span class="mono">${added.destination.destinationId}</span>.
      ${added.secret && K.html`Its secret, shown this once: <code id="new-secret">${added.secret}</code>`}</p>`
    }
  </form>`;
}

/** A workspace's destinations: each with its health; pause, resume, remove (asked twice). */
export function DestinationsView({ ws }: { ws: string }): VNode {
  const base = `/admin/v1/workspaces/${encodeURIComponent(ws)}/destinations`;
  const { answer, reload } = K.useLoad(base);
  const [error, setError] = K.useState("");
  const [confirming, setConfirming] = K.useState("");
  const act = async (d: ListedDestination, verb: "pause" | "resume" | "remove") => {
    if (verb === "remove" && confirming !== d.destinationId) return setConfirming(d.destinationId);
    setConfirming("");
    const path = `${base}/${encodeURIComponent(d.destinationId)}`;
    const got = verb === "remove" ? await K.api("DELETE", path) : await K.api("POST", `${path}/${verb}`);
    setError(got.status === 200 ? "" : K.errorText(got));
    reload();
  };
  const row = (d: ListedDestination) => K.html`<tr class="destination" data-destination-id=${d.destinationId}>
    <td class="mono">${d.destinationId}</td><td>${d.name}</td><td class="mono url">${d.url}</td>
    <td>${d.paused ? "paused" : "active"}</td><td><${K.HealthLine} ws=${ws} id=${d.destinationId} /></td>
    <td><button type="button" onClick=${() => act(d, d.paused ? "resume" : "pause")}>${d.paused ? "Resume" : "Pause"}</button>
      <button type="button" onClick=${() => act(d, "remove")}>${confirming === d.destinationId ? "Really remove?" : "Remove"}</button></td></tr>`;
  return K.html`<section id="destinations">
    <h2>Destinations</h2>
    <${AddDestination} ws=${ws} onAdded=${reload} />
    ${error && K.html`<p class="error">${error}</p>`}
    ${K.loaded(answer, (body: { destinations: ListedDestination[] }) =>
      body.destinations.length === 0
        ? K.html`<p class="muted">No destination yet.</p>`
        : K.html`<table><thead><tr><th>id</th><th>name</th><th>URL</th><th>state</th><th>health</th><th></th></tr></thead>
          <tbody>${body.destinations.map(row)}</tbody></table>`,
    )}
  </section>`;
}

/** The subject ids of a text, one a line (blank lines dropped). Pure. */
export function subjectIdsOf(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** The form that makes a deletion request. */
export function NewRegulation({ ws, onMade }: { ws: string; onMade: () => void }): VNode {
  const [type, setType] = K.useState("SUPPRESS_WITH_DELETE");
  const [ids, setIds] = K.useState("");
  const [error, setError] = K.useState("");
  const submit = async (e: Ev) => {
    e.preventDefault();
    const body = { regulationType: type, subjectType: "USER_ID", subjectIds: subjectIdsOf(ids) };
    const got = await K.api("POST", `/admin/v1/workspaces/${encodeURIComponent(ws)}/regulations`, body);
    setError(got.status === 201 ? "" : K.errorText(got));
    if (got.status !== 201) return;
    setIds("");
    onMade();
  };
  const types = ["SUPPRESS_WITH_DELETE", "DELETE_ONLY", "SUPPRESS_ONLY", "UNSUPPRESS"];
  return K.html`<form id="new-regulation" class="card" onSubmit=${submit}>
    <label>Request <select id="regulation-type" value=${type} onChange=${(e: Ev) => setType(e.currentTarget.value)}>
      ${types.map((t) => K.html`<option value=${t}>${t}</option>`)}</select></label>
    <label>User ids, one a line <textarea id="regulation-ids" rows="3" required value=${ids}
      onInput=${(e: Ev) => setIds(e.currentTarget.value)}></textarea></label>
    <button class="primary" type="submit">Send the request</button>
    ${error && K.html`<p class="error">${error}</p>`}
  </form>`;
}

/** A workspace's deletion requests, newest first, followed every 3 s. */
export function RegulationsView({ ws }: { ws: string }): VNode {
  const { answer, reload } = K.useLoad(`/admin/v1/workspaces/${encodeURIComponent(ws)}/regulations`, 3_000);
  const row = (r: RegulationRecord) => K.html`<tr class="regulation" data-regulate-id=${r.regulateId}>
    <td class="mono">${r.regulateId}</td><td>${r.regulationType}</td><td>${r.subjectIds.length}</td>
    <td class=${`status ${r.overallStatus}`}>${r.overallStatus}</td><td>${r.finished} of ${r.subjectIds.length}</td>
    <td>${K.when(r.createdAt)} ${r.createdBy}</td><td class="error">${r.error ?? ""}</td></tr>`;
  return K.html`<section id="regulations">
    <h2>Deletion requests</h2>
    <${NewRegulation} ws=${ws} onMade=${reload} />
    ${K.loaded(answer, (body: RegulationList) =>
      body.regulations.length === 0
        ? K.html`<p class="muted">No request yet.</p>`
        : K.html`<table><thead><tr><th>id</th><th>type</th><th>users</th><th>status</th><th>done</th><th>created</th><th></th></tr></thead>
          <tbody>${body.regulations.map(row)}</tbody></table>`,
    )}
  </section>`;
}
