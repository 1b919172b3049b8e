/**
 * The admin API's OpenAPI 3.1 document, served at GET /admin/v1/openapi.json: the paths from
 * ADMIN_ROUTES (deploy/admin/routes.ts, the same table the server is built from) and the schemas
 * from the TypeScript types the operations answer with (typia's JSON schema output), so the
 * document cannot drift from what is served. docs/ADMIN.md's route table is checked against it
 * (test/repo/docs.test.ts).
 */
import typia, { type tags } from "typia";
import type { AuditRow } from "../../schemas/clickhouse/audit";
import type { RegulationRecord, RegulationType, ReplayRecord } from "../../schemas/admin/records";
import type { ReplayBody } from "../commands/replay-run";
import type { EventCatalogRow, PropertyCatalogRow } from "../../schemas/clickhouse/catalog";
import type { ListedKey } from "../commands/keys";
import type { ListedToken, TokenInput } from "../commands/tokens";
import { ADMIN_BODY_LIMIT, type AdminError, type Count } from "./api";
import { ADMIN_ROUTES, type AdminRoute } from "./routes";
import { REGULATION_STATUSES, REGULATION_TYPES } from "../commands/regulations";
import type { DestinationBody, PlanCheckBody } from "./routes-workspace";
import type { ListedDestination } from "../commands/destinations";
import type { ReplayCounts, TestAnswer } from "../commands/deliveries";
import type { CheckReport, PlanBody } from "../commands/plan-draft";
import type { TrackingPlan } from "../../schemas/plans";
import type { ViolationList } from "./routes-violations";
import type { DestinationHealth } from "./routes-health";
import type { DlqReplayed, DlqState, FailureList } from "./routes-dlq";

/** GET /admin/v1/workspaces. */
export interface WorkspaceList {
  workspaces: { workspaceId: string; keys: Count }[];
}
/** GET .../keys. */
export interface KeyList {
  keys: ListedKey[];
}
/** POST .../keys: the key, shown only here. */
export interface CreatedKey {
  writeKey: string;
  key: ListedKey;
}
/** GET /admin/v1/tokens. */
export interface TokenList {
  tokens: ListedToken[];
}
/** POST /admin/v1/tokens: the token, shown only here. */
export interface CreatedToken {
  token: string;
  listed: ListedToken;
}
/** The audit routes. */
export interface AuditList {
  entries: AuditRow[];
}
/** POST .../regulations (Segment's body). */
export interface RegulationInput {
  regulationType: RegulationType;
  subjectType: "USER_ID";
  /** 1 to 5,000 userIds (Segment's bound), each 1 to 1,024 characters (deploy/commands/regulations.ts). */
  subjectIds: (string & tags.MinLength<1> & tags.MaxLength<1024>)[] & tags.MinItems<1> & tags.MaxItems<5000>;
}
/** A regulation and its progress. */
export type Regulation = RegulationRecord;
/** GET .../regulations. */
export interface RegulationList {
  regulations: RegulationRecord[];
}
/** GET .../destinations. */
export interface DestinationList {
  destinations: ListedDestination[];
}
/** A destination as lists show it. */
export type Destination = ListedDestination;
/** POST .../destinations: the destination, and a generated secret (only here). */
export interface AddedDestination {
  destination: ListedDestination;
  secret?: string;
}
/** What a removal answers. */
export interface Removed {
  removed: string;
}
/** PUT .../plan: the version applied. */
export interface AppliedPlan {
  version: Count;
  plan: TrackingPlan;
}
/** POST .../plan/diff. */
export interface PlanDiff {
  lines: string[];
}
/** POST .../plan/check. */
export type PlanCheck = CheckReport;
/** POST .../destinations/{id}/test. */
export type DestinationTest = TestAnswer;
/** A destination's replay of a time range and its progress. */
export type Replay = ReplayRecord;

/** GET .../destinations/{id}/replays. */
export interface ReplayList {
  replays: ReplayRecord[];
}

/** GET .../catalog. */
export interface Catalog {
  events: EventCatalogRow[];
  properties: PropertyCatalogRow[];
}

const collection = typia.json.schemas<
  [
    WorkspaceList,
    KeyList,
    ListedKey,
    CreatedKey,
    TokenList,
    ListedToken,
    CreatedToken,
    TokenInput,
    AuditList,
    Catalog,
    RegulationInput,
    Regulation,
    RegulationList,
    DestinationList,
    Destination,
    DestinationBody,
    AddedDestination,
    DestinationTest,
    ReplayCounts,
    ReplayBody,
    Replay,
    ReplayList,
    Removed,
    TrackingPlan,
    PlanBody,
    AppliedPlan,
    PlanDiff,
    PlanCheckBody,
    PlanCheck,
    ViolationList,
    DestinationHealth,
    DlqState,
    DlqReplayed,
    FailureList,
    AdminError,
  ],
  "3.1"
>();

/**
 * The names a route gives that typia files under the type they alias (`type Destination =
 * ListedDestination` is the component ListedDestination): each is a component of its own here,
 * a reference to that type, so every route's `$ref` resolves.
 */
const ALIASES: Record<string, string> = {
  Destination: "ListedDestination",
  DestinationTest: "TestAnswer",
  PlanCheck: "CheckReport",
  Regulation: "RegulationRecord",
  Replay: "ReplayRecord",
};

/** typia's components, with ALIASES (test/faults/node/admin-fuzz.test.ts checks every `$ref` resolves). */
function schemasOf(): Record<string, object> {
  const schemas: Record<string, object> = { ...collection.components.schemas };
  for (const [alias, type] of Object.entries(ALIASES)) schemas[alias] ??= { $ref: `#/components/schemas/${type}` };
  return schemas;
}

const refusal = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/AdminError" } } },
});

/** A comma-separated list of `values` (empty items allowed, as the server skips them). */
const listOf = (values: readonly string[]) => ({ type: "string", pattern: `^(${values.join("|")})?(,(${values.join("|")})?)*$` });

/**
 * The schema of each path parameter: the form of the ids the API makes (schemas/admin/records.ts;
 * a keyId is the first 16 hex of its digest). Another value is a thing that does not exist (404).
 */
const PATH_PARAMETERS: Record<string, object> = {
  workspaceId: { type: "string", minLength: 1 },
  keyId: { type: "string", pattern: "^[0-9a-f]{16}$" },
  tokenId: { type: "string", pattern: "^tok_[0-9a-f]{12}$" },
  destinationId: { type: "string", pattern: "^[a-z0-9][a-z0-9-]{0,62}$" },
  regulateId: { type: "string", pattern: "^reg_[0-9a-f]{16}$" },
  replayId: { type: "string", pattern: "^rpl_[0-9a-f]{16}$" },
};

/** The schema of each query parameter, by name or `<operationId>:<name>` (the server's bounds: routes*.ts). */
const QUERY_PARAMETERS: Record<string, object> = {
  since: { type: "string", format: "date-time" },
  limit: { type: "integer", minimum: 1, maximum: 1_000 },
  "plans.violations:limit": { type: "integer", minimum: 1, maximum: 200 },
  status: listOf(REGULATION_STATUSES),
  regulationTypes: listOf(REGULATION_TYPES),
};

function parametersOf(route: AdminRoute): object[] {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  return [
    ...names.map((name) => ({ name, in: "path", required: true, schema: PATH_PARAMETERS[name] ?? { type: "string", minLength: 1 } })),
    ...(route.query ?? []).map((name) => ({
      name,
      in: "query",
      required: false,
      schema: QUERY_PARAMETERS[`${route.operationId}:${name}`] ?? QUERY_PARAMETERS[name] ?? { type: "string" },
    })),
  ];
}

function responsesOf(route: AdminRoute): Record<string, object> {
  return {
    [String(route.status)]: {
      description: "done",
      content: { "application/json": { schema: { $ref: `#/components/schemas/${route.answer}` } } },
    },
    "400": refusal("a bad parameter or body, naming the field"),
    "401": refusal("no token, or one that is unknown or revoked"),
    "403": refusal("the token may not do this (an operator route, or another workspace's)"),
    ...(route.method === "get" && route.scope !== "workspace" ? {} : { "404": refusal("no such thing in this workspace") }),
    ...(route.method === "get"
      ? {}
      : { "409": refusal("a conflict (an id another workspace holds, a replay of that destination under way)") }),
    ...(route.body === undefined
      ? {}
      : {
          "413": refusal(`a body past ${ADMIN_BODY_LIMIT}`),
          "415": refusal("a body that is not application/json (or of an unknown charset or encoding)"),
        }),
    "429": refusal("too many failed attempts from this network"),
    "503": refusal("Kafka or ClickHouse did not answer"),
  };
}

/** Builds the document; `version` is the package version. */
export function adminOpenapi(version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of ADMIN_ROUTES) {
    const parameters = parametersOf(route);
    paths[route.path] ??= {};
    paths[route.path]![route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      "x-scope": route.scope,
      security: [{ bearer: [] }],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body === undefined
        ? {}
        : { requestBody: { required: true, content: { "application/json": { schema: { $ref: `#/components/schemas/${route.body}` } } } } }),
      responses: responsesOf(route),
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "segment-ingest admin API",
      version,
      description:
        "Write keys, tokens, the audit trail and the catalog of each workspace (docs/ADMIN.md). On the admin port only; never expose it to the internet.",
    },
    servers: [{ url: "/" }],
    paths,
    components: {
      ...collection.components,
      schemas: schemasOf(),
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN, or a token made with it (sat_...)" } },
    },
  };
}
