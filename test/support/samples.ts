/** Request bodies shared by the tests: the spec's samples and one message of every type. */
import type { Message } from "../../schemas/messages";
import { messageRow } from "../../schemas/row";
export const samples = {
  /** Spec §2.1 identify sample. */
  identify: {
    messageId: "23d04926-78e5-4ebc-853f-f26c84ff629e",
    userId: "1043",
    timestamp: "2024-04-18T04:31:03.425Z",
    context: { ip: "66.249.66.1" },
    traits: { email: "john@email.com", firstName: "John", address: { city: "Lisbon" }, tags: [{ a: 1 }] },
  },
  /** Spec §2.3 batch sample: identify and track mixed. */
  batch: {
    batch: [
      {
        type: "identify",
        userId: "1043",
        traits: { email: "john@email.com", firstName: "John" },
        messageId: "1ec9d1a5-3c8e-4f7e-8d2d-1f0d2e3a4b5c",
      },
      {
        type: "track",
        event: "Added to cart",
        userId: "1043",
        properties: { productId: "ab123", price: 12.5 },
        messageId: "6f5f436d-3e1f-4a7a-9c8d-7e6f5d4c3b2a",
      },
    ],
    context: { ip: "66.249.66.1" },
  },
  /** One of each type, with userId or anonymousId. */
  everyType: {
    batch: [
      { type: "identify", messageId: "e1", anonymousId: "anon-1", traits: { plan: "free" } },
      { type: "track", messageId: "e2", userId: "u1", event: "Signed Up", properties: { source: "ad" } },
      { type: "page", messageId: "e3", anonymousId: "anon-1", name: "Home", properties: { path: "/" } },
      { type: "screen", messageId: "e4", userId: "u1", properties: { name: "Settings" } },
      { type: "group", messageId: "e5", userId: "u1", groupId: "g1", traits: { name: "Acme" } },
      { type: "alias", messageId: "e6", userId: "u1", previousId: "anon-1" },
    ],
  },
};

/** One events row line (JSONEachRow) of `m` in `workspaceId`, client-dated at `time`, received at `receivedAt`. */
export function storedLine(workspaceId: string, m: Message, time: Date, receivedAt: Date = time): string {
  const stamp = {
    workspaceId,
    receivedAt: receivedAt.toISOString(),
    sentAt: null,
    originalTimestamp: time.toISOString(),
    timestamp: time.toISOString(),
    context: undefined,
  };
  return JSON.stringify(messageRow(m, stamp));
}
