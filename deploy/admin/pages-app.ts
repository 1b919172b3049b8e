/**
 * The admin pages' browser code, part 1 (deploy/admin/pages.ts serves it): the calls to the admin
 * API, the sign-in, the workspace's tabs and its write keys. Every exported function here runs in
 * the browser, not in Node: pages.ts serves the text of each (as compiled), side by side in one
 * ES module, with `K` (Kit) beside them. So a function may use only its parameters, the browser's
 * globals, the functions of this file by name, and `K` for preact, htm and the functions of the
 * other files (pages-views.ts, pages-plan.ts); never an import (types only) nor a module-level
 * value. Everything the API answers is put in the page as text (htm and preact escape it): event
 * names, keys and values come from anyone holding a write key.
 */
import type { ListedKey } from "../commands/keys";
import type { AdminError } from "./api";
import type { CreatedKey, KeyList, WorkspaceList } from "./openapi";
import type { CatalogView, PlanView } from "./pages-plan";
import type { DestinationsView, HealthLine, RegulationsView } from "./pages-views";

/** A preact element (opaque here). */
export type VNode = { readonly __vnode?: never } | string | null | undefined | false | VNode[];

/** The few members of a DOM event the pages read (the project compiles without the DOM library). */
export interface Ev {
  preventDefault(): void;
  currentTarget: { value: string; checked: boolean };
}

/** What the browser code reaches beyond its own file: pages.ts builds it as `K` in the served module. */
export interface Kit {
  html: (strings: TemplateStringsArray, ...values: unknown[]) => VNode;
  render: (node: VNode, parent: unknown) => void;
  useState: <T>(initial: T) => [T, (next: T | ((previous: T) => T)) => void];
  useEffect: (effect: () => void | (() => void), deps?: unknown[]) => void;
  /** The tab's sessionStorage: the token lives there only (never a cookie, never the URL). */
  storage: { getItem(key: string): string | null; setItem(key: string, value: string): void; removeItem(key: string): void };
  location: { hash: string };
  api: typeof api;
  useLoad: typeof useLoad;
  loaded: typeof loaded;
  errorText: typeof errorText;
  when: typeof when;
  KeysView: typeof KeysView;
  DestinationsView: typeof DestinationsView;
  HealthLine: typeof HealthLine;
  RegulationsView: typeof RegulationsView;
  PlanView: typeof PlanView;
  CatalogView: typeof CatalogView;
}

declare const K: Kit;

/** An answer of the admin API: its status (0: no answer) and JSON body (undefined when none). */
export interface Answer {
  status: number;
  body: unknown;
}

/** Who is signed in, as sessionStorage keeps it. */
export interface Session {
  token: string;
  workspaceId: string;
}

/** Calls the admin API with `token` (the session's by default). Never throws: no answer is status 0. */
export async function api(method: string, path: string, body?: unknown, token?: string): Promise<Answer> {
  const bearer = token ?? K.storage.getItem("adminToken") ?? "";
  const headers: Record<string, string> = { authorization: `Bearer ${bearer}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  try {
    const response = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, body: parsed };
  } catch {
    return { status: 0, body: undefined };
  }
}

/** A refusal as a sentence: the API's message, the field at fault and its issues. Pure. */
export function errorText(answer: Answer): string {
  if (answer.status === 0) return "the ingest did not answer";
  const error = (answer.body ?? {}) as Partial<AdminError>;
  const issues = (error.issues ?? []).map((i) => `${i.field}: expected ${i.expected}`);
  const field = error.field ? ` (${error.field})` : "";
  return [`${error.message ?? `HTTP ${answer.status}`}${field}`, ...issues].join("; ");
}

/** An ISO 8601 time as `YYYY-MM-DD HH:MM:SS` (UTC), '' for none. Pure. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().slice(0, 19).replace("T", " ");
}

/** The API's answer to GET `path`, again on `reload()` and every `everyMs` (0: never). */
export function useLoad(path: string, everyMs = 0): { answer: Answer | undefined; reload: () => void } {
  const [answer, setAnswer] = K.useState<Answer | undefined>(undefined);
  const [tick, setTick] = K.useState(0);
  K.useEffect(() => {
    let current = true;
    void api("GET", path).then((got) => current && setAnswer(got));
    const timer = everyMs > 0 ? setTimeout(() => setTick((t) => t + 1), everyMs) : undefined;
    return () => {
      current = false;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [path, tick]);
  return { answer, reload: () => setTick((t) => t + 1) };
}

/** `show(body)` of a 200 answer; otherwise "loading" or the refusal. */
export function loaded<T>(answer: Answer | undefined, show: (body: T) => VNode): VNode {
  if (answer === undefined) return K.html`<p class="muted">loading…</p>`;
  if (answer.status !== 200) return K.html`<p class="error">${errorText(answer)}</p>`;
  return show(answer.body as T);
}

/** The session in sessionStorage, if any. */
export function readSession(): Session | undefined {
  const token = K.storage.getItem("adminToken");
  const workspaceId = K.storage.getItem("adminWorkspace");
  return token && workspaceId ? { token, workspaceId } : undefined;
}

/**
 * Checks `token` (the workspace list) and its access to `workspace` (its keys; empty: the one
 * workspace the token lists), then keeps both in sessionStorage: the session, or why not.
 */
export async function signIn(token: string, workspace: string): Promise<Session | string> {
  const list = await api("GET", "/admin/v1/workspaces", undefined, token);
  if (list.status === 401) return "this token was refused";
  if (list.status !== 200) return errorText(list);
  const listed = (list.body as WorkspaceList).workspaces.map((w) => w.workspaceId);
  const workspaceId = workspace || (listed.length === 1 ? listed[0]! : "");
  if (workspaceId === "") return `name the workspace (this token lists ${listed.length})`;
  const keys = await api("GET", `/admin/v1/workspaces/${encodeURIComponent(workspaceId)}/keys`, undefined, token);
  if (keys.status === 403) return `this token may not see workspace ${workspaceId}`;
  if (keys.status !== 200) return errorText(keys);
  K.storage.setItem("adminToken", token);
  K.storage.setItem("adminWorkspace", workspaceId);
  return { token, workspaceId };
}

/** The sign-in form. */
export function SignIn({ onDone }: { onDone: (session: Session) => void }): VNode {
  const [token, setToken] = K.useState("");
  const [workspace, setWorkspace] = K.useState("");
  const [error, setError] = K.useState("");
  const submit = async (e: Ev) => {
    e.preventDefault();
    setError("");
    const found = await signIn(token.trim(), workspace.trim());
    if (typeof found === "string") setError(found);
    else onDone(found);
  };
  return K.html`<form id="sign-in" class="card" onSubmit=${submit}>
    <h1>Admin</h1>
    <label>Token <input id="token" type="password" autocomplete="off" required value=${token}
      onInput=${(e: Ev) => setToken(e.currentTarget.value)} /></label>
    <label>Workspace <input id="workspace" autocomplete="off" placeholder="the token's own" value=${workspace}
      onInput=${(e: Ev) => setWorkspace(e.currentTarget.value)} /></label>
    <button class="primary" type="submit">Sign in</button>
    ${error && K.html`<p class="error" id="sign-in-error">${error}</p>`}
  </form>`;
}

/** The tabs: [hash, label]. Pure. */
export function tabList(): [string, string][] {
  return [
    ["keys", "Write keys"],
    ["destinations", "Destinations"],
    ["plan", "Tracking plan"],
    ["catalog", "Catalog"],
    ["regulations", "Deletion requests"],
  ];
}

/** The tab a location hash names (`#plan`), the first one otherwise. Pure. */
export function tabOf(hash: string): string {
  const name = hash.replace(/^#/, "");
  return tabList().some(([tab]) => tab === name) ? name : "keys";
}

/** One workspace: its tabs, the live view's link (same token, through sessionStorage) and sign-out. */
export function Workspace({ session, onSignOut }: { session: Session; onSignOut: () => void }): VNode {
  const [tab, setTab] = K.useState(tabOf(K.location.hash));
  const choose = (name: string) => {
    setTab(name);
    K.location.hash = name;
  };
  const views: Record<string, (props: { ws: string }) => VNode> = {
    keys: K.KeysView,
    destinations: K.DestinationsView,
    plan: K.PlanView,
    catalog: K.CatalogView,
    regulations: K.RegulationsView,
  };
  // The live view (ingest/live/page.ts) starts on its own with these two.
  const live = () => {
    K.storage.setItem("liveToken", session.token);
    K.storage.setItem("liveWorkspace", session.workspaceId);
  };
  return K.html`<header>
      <h1>Workspace <span id="current-workspace">${session.workspaceId}</span></h1>
      <nav>
        ${tabList().map(
          ([name, label]) =>
            K.html`<button type="button" id=${`tab-${name}`} class=${name === tab ? "tab on" : "tab"} onClick=${() => choose(name)}>${label}</button>`,
        )}
        <a id="live-link" href="/live" onClick=${live}>Live view</a>
      </nav>
      <button type="button" id="sign-out" onClick=${onSignOut}>Sign out</button>
    </header>
    <main><${views[tab]!} ws=${session.workspaceId} /></main>`;
}

/** The pages: the sign-in until a session exists, then its workspace. */
export function App(): VNode {
  const [session, setSession] = K.useState<Session | undefined>(readSession());
  const signOut = () => {
    K.storage.removeItem("adminToken");
    K.storage.removeItem("adminWorkspace");
    setSession(undefined);
  };
  if (session === undefined) return K.html`<${SignIn} onDone=${setSession} />`;
  return K.html`<${Workspace} session=${session} onSignOut=${signOut} />`;
}

/** A workspace's write keys: create (the key shown once), revoke (asked twice, never a dialog). */
export function KeysView({ ws }: { ws: string }): VNode {
  const base = `/admin/v1/workspaces/${encodeURIComponent(ws)}/keys`;
  const { answer, reload } = useLoad(base);
  const [created, setCreated] = K.useState<CreatedKey | undefined>(undefined);
  const [error, setError] = K.useState("");
  const [confirming, setConfirming] = K.useState("");
  const create = async () => {
    const got = await api("POST", base);
    setError(got.status === 201 ? "" : errorText(got));
    if (got.status === 201) setCreated(got.body as CreatedKey);
    reload();
  };
  const revoke = async (keyId: string) => {
    if (confirming !== keyId) return setConfirming(keyId);
    setConfirming("");
    const got = await api("DELETE", `${base}/${encodeURIComponent(keyId)}`);
    setError(got.status === 200 ? "" : errorText(got));
    reload();
  };
  const row = (k: ListedKey) => K.html`<tr class=${k.revokedAt ? "key revoked" : "key"} data-key-id=${k.keyId}>
    <td class="mono">${k.fingerprint}</td><td>${k.source}</td><td>${when(k.createdAt)} ${k.createdBy ?? ""}</td>
    <td>${when(k.lastUsedAt) || "never"}</td><td>${k.revokedAt ? `revoked ${when(k.revokedAt)}` : "active"}</td>
    <td>${
      k.revokedAt || k.source !== "api"
        ? ""
        : K.html`<button type="button" class="revoke" onClick=${() => revoke(k.keyId)}>
      ${confirming === k.keyId ? "Really revoke?" : "Revoke"}</button>`
    }</td></tr>`;
  return K.html`<section id="keys">
    <h2>Write keys</h2>
    <p><button class="primary" id="create-key" type="button" onClick=${create}>Create a key</button></p>
    ${
      created &&
      K.html`<div class="once" id="new-key-box"><p>The new key, shown this once: copy it now.</p>
      <code id="new-key">${created.writeKey}</code></div>`
    }
    ${error && K.html`<p class="error">${error}</p>`}
    ${loaded(answer, (body: KeyList) =>
      body.keys.length === 0
        ? K.html`<p class="muted">No key yet.</p>`
        : K.html`<table><thead><tr><th>key</th><th>source</th><th>created</th><th>last used</th><th>state</th><th></th></tr></thead>
          <tbody>${body.keys.map(row)}</tbody></table>`,
    )}
  </section>`;
}
