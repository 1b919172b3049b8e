/**
 * The OpenAPI 3.1 document of the ingest API, built from the same TypeScript types the guards
 * are generated from (typia's JSON schema output), so the document cannot drift from what the
 * server accepts.
 */
import typia from "typia";
import type { ErrorBody } from "./errors";
import { routeTable } from "./routes";
import type { AliasBody, BatchBody, GroupBody, IdentifyBody, PageBody, ScreenBody, TrackBody } from "../../schemas/messages";

const collection = typia.json.schemas<[IdentifyBody, TrackBody, PageBody, ScreenBody, GroupBody, AliasBody, BatchBody, ErrorBody], "3.1">();

const BODY_SCHEMAS: Record<string, string> = {
  identify: "IdentifyBody",
  track: "TrackBody",
  page: "PageBody",
  screen: "ScreenBody",
  group: "GroupBody",
  alias: "AliasBody",
  batch: "BatchBody",
};

/** Segment's success body (ingest/http/routes.ts SEGMENT_SUCCESS). */
const SUCCESS_SCHEMA = { type: "object", required: ["success"], properties: { success: { const: true } } };

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } },
});

/**
 * typia renders each type on its own; the cross-field rule of `Identified` (userId or
 * anonymousId) is added to every message schema here so the document says what the server checks.
 */
function withIdentityRule(schemas: Record<string, object>): Record<string, object> {
  const identified = { anyOf: [{ required: ["userId"] }, { required: ["anonymousId"] }] };
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [
      name,
      /(Body|Message)$/.test(name) && name !== "BatchBody" && name !== "ErrorBody" ? { ...schema, ...identified } : schema,
    ]),
  );
}

/** Builds the document; `version` is the package version. */
export function openapiDocument(version: string): object {
  const paths: Record<string, object> = {};
  // The limit does not shape the document; only the paths and kinds are read.
  for (const { path, kind, successBody } of routeTable({ maxBatchMessages: 1, maxRequestBytes: 1 })) {
    const schema = { $ref: `#/components/schemas/${BODY_SCHEMAS[kind]}` };
    const name = path.split("/").pop()!;
    paths[path] = {
      post: {
        operationId: `${path.startsWith("/v1/") ? "v1" : "apps"}_${name}`,
        summary: kind === "batch" ? "Send a batch of messages" : `Send one ${kind} message`,
        security: [{ basic: [] }, { bearer: [] }, { PublicWriteKey: [] }, {}],
        requestBody: {
          required: true,
          content: { "application/json": { schema }, "text/plain": { schema } },
        },
        responses: {
          "200": {
            description: `Every accepted message was acknowledged by Kafka (acks=all). ${successBody === "" ? "Empty body (the spec's)." : 'Body {"success":true}, as Segment answers.'} Refused batch items are kept in rejected_messages and counted in X-Rejected-Messages.`,
            headers: {
              "X-Rejected-Messages": { description: "Batch items refused (absent when none)", schema: { type: "integer", minimum: 1 } },
            },
            ...(successBody === "" ? {} : { content: { "application/json": { schema: SUCCESS_SCHEMA } } }),
          },
          "400": error(
            "Invalid JSON, a gzip or deflate body that does not decompress, no valid message in the body (the first 100 bad fields named in `issues`, the others counted in `issuesNotListed`), or too many messages",
          ),
          "408": error("The whole body did not arrive within INGEST_BODY_TIMEOUT_MS; the connection is closed"),
          "401": error("Missing, unknown or conflicting writeKey"),
          "413": error("Body or one message over its limit, or a body that would take more memory parsed than one request may hold"),
          "415": error("Unsupported Content-Type or Content-Encoding"),
          "429": error("This writeKey is over its rate limit; retry after the Retry-After header's seconds"),
          "503": error("Kafka unavailable, or too many request bytes in flight; retry after the Retry-After header's seconds"),
        },
      },
    };
  }
  paths["/v1/projects/{writeKey}/settings"] = {
    get: {
      operationId: "v1_settings",
      summary: "The settings document analytics.js and the mobile SDKs load first, pointing them at this ingest",
      parameters: [{ name: "writeKey", in: "path", required: true, schema: { type: "string", minLength: 1 } }],
      responses: {
        "200": {
          description: "Segment.io pointed at this ingest (apiKey, apiHost, protocol); no other destination or plugin",
          content: {
            "application/json": {
              schema: { type: "object", required: ["integrations"], properties: { integrations: { type: "object" } } },
            },
          },
        },
        "404": error("No project has this writeKey"),
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "segment-ingest",
      version,
      description: "Segment-compatible event ingestion. Every message needs messageId and userId or anonymousId.",
    },
    paths,
    components: {
      schemas: withIdentityRule(collection.components.schemas as Record<string, object>),
      securitySchemes: {
        basic: { type: "http", scheme: "basic", description: "writeKey as user, empty password" },
        bearer: { type: "http", scheme: "bearer", description: "the writeKey" },
        PublicWriteKey: { type: "apiKey", in: "header", name: "PublicWriteKey" },
      },
    },
  };
}
