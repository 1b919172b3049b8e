/** The ingest's request limits (ingest/http/app.ts AppDeps.limits; their settings in ingest/config.ts). */

/** Request limits; defaults are Segment's. */
export interface Limits {
  /** Body bytes after decompression (Segment: 500 KB). */
  maxRequestBytes: number;
  /** Bytes of one stored message (Segment: 32 KB). */
  maxMessageBytes: number;
  /** Messages in one batch (Segment: 2,500). */
  maxBatchMessages: number;
  /** Nesting of arrays and objects. */
  maxJsonDepth: number;
  /**
   * Bytes of one Kafka record (schemas/kafka/limits.ts recordBytes: key + value + overhead): the
   * producer's send limit (the smaller of KAFKA_MAX_MESSAGE_BYTES and both topics'
   * max.message.bytes, read at start) less the batch slack (recordLimit). A message whose record
   * is bigger is refused as an item (413 message_too_large when no message is left); a refused
   * item's raw text is cut to fit.
   */
  maxRecordBytes: number;
}
