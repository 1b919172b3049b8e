/**
 * The admin pages' browser code, part 3: a workspace's tracking plan (shown, drafted from the
 * catalog, applied) with its recent violations, and its catalog of what has arrived. Runs in the
 * browser under the rules of pages-app.ts (its module comment); event names, property keys and
 * violations are anyone's text and are only ever shown as text.
 */
import type { EventCatalogRow, PropertyCatalogRow } from "../../schemas/clickhouse/catalog";
import type { TrackingPlan } from "../../schemas/plans";
import type { Catalog } from "./openapi";
import type { Ev, Kit, VNode } from "./pages-app";
import type { FlaggedMessage, ViolationList } from "./routes-violations";

declare const K: Kit;

/** A stored violation (JSON text) as `path: message`; text that is not one, as it is. Pure. */
export function violationText(stored: string): string {
  try {
    const v = JSON.parse(stored) as { path?: unknown; message?: unknown; keyword?: unknown };
    if (typeof v.path === "string" && typeof v.message === "string") return `${v.path || "/"}: ${v.message}`;
  } catch {
    // not JSON: shown as stored
  }
  return stored;
}

/** What an event row of the catalog names: its event, else its name; an over-cap row says so. Pure. */
export function catalogLabel(row: EventCatalogRow): string {
  return row.over_cap === 1 ? `(over the daily cap) ${row.name}` : row.event || row.name;
}

/** The plan's JSON for the editor: the body `PUT .../plan` takes (its own fields left out). Pure. */
export function planBodyText(plan: TrackingPlan | object): string {
  const { workspaceId: _w, version: _v, createdAt: _c, ...body } = plan as Partial<TrackingPlan>;
  return JSON.stringify(body, null, 2);
}

/** The recent violations, read again every 5 s. */
export function Violations({ ws }: { ws: string }): VNode {
  const { answer } = K.useLoad(`/admin/v1/workspaces/${encodeURIComponent(ws)}/plan/violations?limit=50`, 5_000);
  const row = (m: FlaggedMessage) => K.html`<tr class="violation" data-message-id=${m.messageId}>
    <td>${K.when(m.receivedAt)}</td><td>${m.type}</td><td class="what">${m.event}</td><td class="mono">${m.messageId}</td>
    <td><ul>${m.violations.map((v) => K.html`<li>${violationText(v)}</li>`)}</ul></td></tr>`;
  return K.html`<h3>Recent violations</h3>
    ${K.loaded(answer, (body: ViolationList) =>
      body.violations.length === 0
        ? K.html`<p class="muted" id="no-violations">No violation lately.</p>`
        : K.html`<table id="violations"><thead><tr><th>received</th><th>type</th><th>event</th><th>messageId</th><th>violations</th></tr></thead>
          <tbody>${body.violations.map(row)}</tbody></table>`,
    )}`;
}

/** The plan in force (404: none) and an editor to apply the next version, or a draft from the catalog. */
export function PlanView({ ws }: { ws: string }): VNode {
  const base = `/admin/v1/workspaces/${encodeURIComponent(ws)}/plan`;
  const { answer, reload } = K.useLoad(base);
  const [text, setText] = K.useState("");
  const [note, setNote] = K.useState("");
  const draft = async () => {
    const got = await K.api("GET", `${base}/draft`);
    if (got.status === 200) setText(planBodyText(got.body as object));
    setNote(got.status === 200 ? "A draft from the catalog: check it, then apply." : K.errorText(got));
  };
  const apply = async (e: Ev) => {
    e.preventDefault();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      return setNote(`not JSON: ${(error as Error).message}`);
    }
    const got = await K.api("PUT", base, body);
    setNote(got.status === 200 ? `Applied: version ${(got.body as { version: number }).version}.` : K.errorText(got));
    reload();
  };
  const plan = answer?.status === 200 ? (answer.body as TrackingPlan) : undefined;
  const summary = plan
    ? K.html`<p id="plan-summary">Version ${plan.version} of ${K.when(plan.createdAt)}: unplanned events ${plan.unplanned},
        violations ${plan.violations}; ${Object.keys(plan.track).length} track events planned.</p>
        <ul class="events">${Object.keys(plan.track).map((name) => K.html`<li class="mono">${name}</li>`)}</ul>`
    : answer?.status === 404
      ? K.html`<p class="muted" id="plan-summary">No tracking plan.</p>`
      : K.loaded(answer, () => null);
  return K.html`<section id="plan">
    <h2>Tracking plan</h2>
    ${summary}
    <form id="apply-plan" class="card" onSubmit=${apply}>
      <textarea id="plan-text" rows="10" spellcheck="false" value=${text} onInput=${(e: Ev) => setText(e.currentTarget.value)}></textarea>
      <p><button type="button" onClick=${() => plan && setText(planBodyText(plan))}>Edit the plan in force</button>
        <button type="button" onClick=${draft}>Draft from the catalog</button>
        <button class="primary" type="submit">Apply</button></p>
      ${note && K.html`<p class="note">${note}</p>`}
    </form>
    <${Violations} ws=${ws} />
  </section>`;
}

/** What has arrived: each event with its count, and each key of properties, traits and context with its types. */
export function CatalogView({ ws }: { ws: string }): VNode {
  const { answer, reload } = K.useLoad(`/admin/v1/workspaces/${encodeURIComponent(ws)}/catalog`);
  const event = (r: EventCatalogRow) => K.html`<tr class="catalog-event">
    <td>${r.type}</td><td class="what">${catalogLabel(r)}</td><td class="num">${r.count}</td><td>${r.first_seen}</td><td>${r.last_seen}</td></tr>`;
  const property = (r: PropertyCatalogRow) => K.html`<tr class="catalog-property">
    <td>${r.type}</td><td class="what">${r.event || r.name}</td><td>${r.source}</td><td class="mono key">${r.key}</td>
    <td>${r.types.join(", ")}</td><td class="num">${r.count}</td></tr>`;
  return K.html`<section id="catalog">
    <h2>Catalog <button type="button" id="catalog-reload" onClick=${reload}>Reload</button></h2>
    ${K.loaded(
      answer,
      (body: Catalog) => K.html`<h3>Events</h3>
        <table id="catalog-events"><thead><tr><th>type</th><th>event</th><th>messages</th><th>first seen</th><th>last seen</th></tr></thead>
          <tbody>${body.events.map(event)}</tbody></table>
        <h3>Keys</h3>
        <table id="catalog-properties"><thead><tr><th>type</th><th>event</th><th>in</th><th>key</th><th>types</th><th>messages</th></tr></thead>
          <tbody>${body.properties.map(property)}</tbody></table>`,
    )}
  </section>`;
}
