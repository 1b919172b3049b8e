/**
 * The OpenAPI 3.1 document of the ingest API, built from the same TypeScript types the guards
 * are generated from (typia's JSON schema output), so the document cannot drift from what the
 * server accepts.
 */
import typia from "typia";
import type { ErrorBody } from "./errors";
import { PREFIXES, SINGLE_TYPES } from "./routes";
import type { AliasBody, BatchBody, GroupBody, IdentifyBody, PageBody, ScreenBody, TrackBody } from "../schemas/messages";

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
  for (const prefix of PREFIXES) {
    for (const route of [...SINGLE_TYPES, "batch"]) {
      const schema = { $ref: `#/components/schemas/${BODY_SCHEMAS[route]}` };
      paths[`${prefix}/${route}`] = {
        post: {
          operationId: `${prefix === "/v1" ? "v1" : "apps"}_${route}`,
          summary: route === "batch" ? "Send a batch of messages" : `Send one ${route} message`,
          security: [{ basic: [] }, { bearer: [] }, { PublicWriteKey: [] }, {}],
          requestBody: {
            required: true,
            content: { "application/json": { schema }, "text/plain": { schema } },
          },
          responses: {
            "200": { description: "Every message was acknowledged by Kafka (acks=all). Empty body." },
            "400": error("Invalid JSON, a field failing validation (each named in `issues`), or too many messages"),
            "401": error("Missing, unknown or conflicting writeKey"),
            "413": error("Body or one message over its limit"),
            "415": error("Unsupported Content-Type or Content-Encoding"),
            "429": error("This writeKey is over its rate limit; retry after the Retry-After header's seconds"),
            "503": error("Kafka unavailable; retry after the Retry-After header's seconds"),
          },
        },
      };
    }
  }
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
