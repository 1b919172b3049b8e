import com.segment.analytics.Analytics;
import com.segment.analytics.Callback;
import com.segment.analytics.Log;
import com.segment.analytics.messages.AliasMessage;
import com.segment.analytics.messages.GroupMessage;
import com.segment.analytics.messages.IdentifyMessage;
import com.segment.analytics.messages.Message;
import com.segment.analytics.messages.MessageBuilder;
import com.segment.analytics.messages.PageMessage;
import com.segment.analytics.messages.ScreenMessage;
import com.segment.analytics.messages.TrackMessage;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Drives Segment's analytics-java, unmodified, for test/sdk-java.test.ts.
 *
 * <p>Arguments: endpoint (the ingest's base URL), writeKey, messageId prefix, messages per type,
 * seconds to wait for the SDK's verdicts. Builds {@code perType} messages of each of the six types
 * with messageIds {@code <prefix>-<type>-<i>}, enqueues every one of them twice (the second round
 * after the first, so a copy travels in another batch), flushes, shuts down, then waits until the
 * SDK has called back once per enqueued message. Every line the SDK logs is printed with its level;
 * the last line is {@code result enqueued=N succeeded=N failed=N}. Exits 0 only when every
 * enqueued message was reported a success before the deadline.
 */
public final class SendEveryType {
  private static final String[] TYPES = {"identify", "track", "page", "screen", "group", "alias"};
  private static final Date WHEN = Date.from(Instant.parse("2024-01-02T03:04:05.678Z"));

  private SendEveryType() {}

  /** Runs one round trip; see the class comment for arguments and exit status. */
  public static void main(String[] args) throws InterruptedException {
    if (args.length != 5) {
      System.err.println("usage: SendEveryType <endpoint> <writeKey> <prefix> <perType> <seconds>");
      System.exit(64);
    }
    String endpoint = args[0];
    String writeKey = args[1];
    String prefix = args[2];
    int perType = Integer.parseInt(args[3]);
    long seconds = Long.parseLong(args[4]);
    int enqueued = 2 * perType * TYPES.length;

    CountDownLatch verdicts = new CountDownLatch(enqueued);
    AtomicInteger succeeded = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    Analytics analytics =
        Analytics.builder(writeKey)
            .endpoint(endpoint)
            .log(new StdoutLog())
            .flushQueueSize(40)
            .callback(
                new Callback() {
                  @Override
                  public void success(Message message) {
                    succeeded.incrementAndGet();
                    verdicts.countDown();
                  }

                  @Override
                  public void failure(Message message, Throwable error) {
                    failed.incrementAndGet();
                    System.out.println("failure " + message.messageId() + ": " + error);
                    verdicts.countDown();
                  }
                })
            .build();

    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < perType; i++) {
        for (String type : TYPES) {
          analytics.enqueue(message(type, prefix + "-" + type + "-" + i, i));
        }
      }
    }
    analytics.flush();
    analytics.shutdown();
    boolean settled = verdicts.await(seconds, TimeUnit.SECONDS);
    System.out.printf(
        "result enqueued=%d succeeded=%d failed=%d%s%n",
        enqueued, succeeded.get(), failed.get(), settled ? "" : " (deadline passed)");
    System.exit(settled && succeeded.get() == enqueued ? 0 : 1);
  }

  /** The builder of message number {@code i} of a type; the test expects exactly these values. */
  private static MessageBuilder<?, ?> message(String type, String messageId, int i) {
    String user = "java-u" + i;
    String device = "java-a" + i;
    MessageBuilder<?, ?> builder;
    switch (type) {
      case "identify":
        builder =
            IdentifyMessage.builder()
                .userId(user)
                .traits(
                    Map.of(
                        "email", user + "@example.com",
                        "index", i,
                        "home", Map.of("city", "Lisbon")));
        break;
      case "track":
        builder =
            TrackMessage.builder("Order Completed")
                .userId(user)
                .properties(Map.of("price", 9.5, "index", i, "items", List.of(Map.of("sku", "a"))));
        break;
      case "page":
        builder =
            PageMessage.builder("Home")
                .anonymousId(device)
                .category("Docs")
                .properties(Map.of("path", "/", "index", i));
        break;
      case "screen":
        builder = ScreenMessage.builder("Main").userId(user).properties(Map.of("index", i));
        break;
      case "group":
        builder = GroupMessage.builder("g" + i).userId(user).traits(Map.of("plan", "pro"));
        break;
      case "alias":
        builder = AliasMessage.builder(device).userId(user);
        break;
      default:
        throw new IllegalArgumentException(type);
    }
    return builder.messageId(messageId).timestamp(WHEN);
  }

  /** The SDK's log on stdout, one line per entry, with its level (and the error, if any). */
  private static final class StdoutLog implements Log {
    @Override
    public void print(Level level, String format, Object... args) {
      System.out.println("analytics-java " + level + ": " + String.format(format, args));
    }

    @Override
    public void print(Level level, Throwable error, String format, Object... args) {
      System.out.println(
          "analytics-java " + level + ": " + String.format(format, args) + " (" + error + ")");
    }
  }
}
