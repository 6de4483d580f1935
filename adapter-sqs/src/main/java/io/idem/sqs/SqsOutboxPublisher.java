package io.idem.sqs;

import io.idem.NonRetryableException;
import io.idem.TraceContext;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;
import software.amazon.awssdk.services.sqs.model.SqsException;

/**
 * Publishes outbox rows to SQS: the row's destination is the queue URL, the idempotency key in the
 * {@value OutboxMessage#KEY_HEADER} message attribute (where the next Idem consumer's default
 * extractor finds it), extra headers as String attributes (SQS allows 10 attributes per message).
 *
 * <p>On a FIFO queue (URL ending in {@code .fifo}) the {@code MessageDeduplicationId} is the key
 * (its SHA-256 in hex when the key is not 1 to 128 printable ASCII characters, as SQS requires),
 * so SQS itself drops a repeat within its 5-minute deduplication interval, and the {@code
 * MessageGroupId} is the ordering key (the key itself when there is none). A body that is not
 * UTF-8 text of XML characters travels as Base64 with {@value SqsInboundMessage#BODY_ENCODING_ATTRIBUTE} = {@value
 * SqsInboundMessage#BASE64}, which the Idem consumer decodes.
 *
 * <p>{@link #publish} returns once {@code SendMessage} answered (SQS has stored the message);
 * {@link #publishAll} sends a batch with {@code SendMessageBatch}, up to 10 rows per request.
 * Thread-safe (SqsClient is). The client is the caller's: {@link #close()} leaves it open.
 *
 * <p>What the outbox relay makes of its failures: the SDK's {@code SdkClientException} (no answer:
 * connection refused or reset, timeouts, after the SDK's own retries) and a 5xx or throttling
 * answer are a destination outage, charged to no row; any other answer (a missing queue, an
 * invalid attribute) is one failed attempt of the row.
 */
public final class SqsOutboxPublisher implements OutboxPublisher {
  private static final Pattern DEDUP_ID = Pattern.compile("[\\x21-\\x7E]{1,128}");
  /** Most entries of one {@code SendMessageBatch}: {@value}, SQS's limit. */
  static final int MAX_BATCH_ENTRIES = 10;
  /** Most bytes of one {@code SendMessageBatch} (all its bodies and attributes): 256 KiB. */
  static final int MAX_BATCH_BYTES = 262_144;
  private final SqsClient client;

  private SqsOutboxPublisher(SqsClient client) {
    this.client = client;
  }

  /** A publisher sending with {@code client}. */
  public static SqsOutboxPublisher create(SqsClient client) {
    return new SqsOutboxPublisher(Objects.requireNonNull(client, "client"));
  }

  /**
   * Sends the message and waits for SQS's answer.
   *
   * @throws NonRetryableException when the row has more than 9 extra headers (it would never fit;
   *     the {@code traceparent} attribute of a traced row is left out rather than go over 10)
   * @throws software.amazon.awssdk.core.exception.SdkException when SQS refused it or could not be
   *     reached
   */
  @Override
  public void publish(OutboxMessage message) {
    client.sendMessage(request(message));
  }

  /**
   * Sends the batch with {@code SendMessageBatch}: the rows of each queue, in list order, in
   * requests of at most {@value #MAX_BATCH_ENTRIES} entries and {@value #MAX_BATCH_BYTES} bytes,
   * one request after the other (each waits for its answer); the rows of one ordering key go out
   * in list order also across queues (a key's row for another queue sends the open request of
   * the first queue before it); a row too large to share a request goes alone with {@code
   * SendMessage}. Per row: sent when its entry succeeded; failed with an
   * {@code SqsException} carrying the entry's error code (status 400 when SQS says the sender is
   * at fault, else 500: an outage) or with the whole request's failure; skipped behind an earlier
   * failure of its ordering key (the key's later rows are not sent: within a request, SQS FIFO
   * keeps one group's entries in request order, and a refusal of one entry leaves the later ones
   * of its key reported as they ended). A request SQS did not answer (the SDK's {@code
   * SdkClientException}) or answered with a 5xx/throttling error ends the batch: the rest is
   * skipped. A client that does not implement {@code sendMessageBatch} (a view of an asynchronous
   * one) is used row by row.
   */
  @Override
  public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) {
    Batch batch = new Batch();
    for (OutboxMessage m : messages) {
      if (batch.ended) {
        break;
      }
      String key = m.orderingKey();
      if (key != null && batch.stoppedKeys.contains(key)) {
        continue;
      }
      SendMessageRequest request;
      try {
        request = request(m);
      } catch (RuntimeException e) { // too many attributes: this row's, never sent
        fail(m, e, batch.results, batch.stoppedKeys);
        continue;
      }
      String otherQueue = key == null ? null : batch.keyQueue.get(key);
      if (otherQueue != null && !otherQueue.equals(m.destination())) {
        batch.flush(otherQueue); // the key's earlier rows to another queue go first
      }
      long size = size(request);
      if (size > MAX_BATCH_BYTES) {
        batch.flush(m.destination());
        if (!batch.ended && (key == null || !batch.stoppedKeys.contains(key))) {
          batch.ended = sendAlone(m, request, batch.results, batch.stoppedKeys);
        }
        continue;
      }
      Chunk chunk = batch.open.get(m.destination());
      if (chunk != null && chunk.bytes + size > MAX_BATCH_BYTES) {
        batch.flush(m.destination());
        chunk = null;
      }
      if (batch.ended || (key != null && batch.stoppedKeys.contains(key))) {
        continue;
      }
      if (chunk == null) {
        chunk = new Chunk();
        batch.open.put(m.destination(), chunk);
      }
      chunk.rows.add(m);
      chunk.entries.add(entry("e" + chunk.rows.size(), request));
      chunk.bytes += size;
      if (key != null) {
        batch.keyQueue.put(key, m.destination());
      }
      if (chunk.rows.size() == MAX_BATCH_ENTRIES) {
        batch.flush(m.destination());
      }
    }
    for (String queue : List.copyOf(batch.open.keySet())) {
      batch.flush(queue);
    }
    List<OutboxPublishResult> ordered = new ArrayList<>(messages.size());
    for (OutboxMessage m : messages) {
      OutboxPublishResult r = batch.results.get(m.id());
      ordered.add(r != null ? r : OutboxPublishResult.skipped(m));
    }
    return ordered;
  }

  /** The rows of one queue waiting for their request. */
  private static final class Chunk {
    final List<OutboxMessage> rows = new ArrayList<>();
    final List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
    long bytes;
  }

  /**
   * One {@link #publishAll}: an open request per queue, each ordering key's unsent rows in at
   * most one of them (a key's row for another queue sends the first queue's request before it is
   * added), so each key's rows go out in list order.
   */
  private final class Batch {
    final Map<Long, OutboxPublishResult> results = new HashMap<>();
    final Set<String> stoppedKeys = new HashSet<>();
    final Map<String, Chunk> open = new LinkedHashMap<>();
    final Map<String, String> keyQueue = new HashMap<>();
    boolean ended;

    void flush(String queue) {
      Chunk chunk = open.remove(queue);
      if (chunk == null) {
        return;
      }
      for (OutboxMessage m : chunk.rows) {
        if (m.orderingKey() != null) {
          keyQueue.remove(m.orderingKey(), queue);
        }
      }
      if (!ended) {
        ended = sendBatch(chunk.rows, chunk.entries, results, stoppedKeys);
      }
    }
  }

  /** One request; returns whether the batch must end (SQS unreachable, 5xx, throttled). */
  private boolean sendBatch(List<OutboxMessage> chunk, List<SendMessageBatchRequestEntry> entries,
      Map<Long, OutboxPublishResult> results, Set<String> stoppedKeys) {
    SendMessageBatchResponse response;
    try {
      response = client.sendMessageBatch(SendMessageBatchRequest.builder()
          .queueUrl(chunk.get(0).destination()).entries(entries).build());
    } catch (UnsupportedOperationException e) { // a client of one call only: row by row
      for (int i = 0; i < chunk.size(); i++) {
        OutboxMessage m = chunk.get(i);
        if (m.orderingKey() != null && stoppedKeys.contains(m.orderingKey())) {
          continue;
        }
        SendMessageRequest request = SendMessageRequest.builder().queueUrl(m.destination())
            .messageBody(entries.get(i).messageBody()).messageAttributes(entries.get(i).messageAttributes())
            .messageDeduplicationId(entries.get(i).messageDeduplicationId())
            .messageGroupId(entries.get(i).messageGroupId()).build();
        if (sendAlone(m, request, results, stoppedKeys)) {
          return true;
        }
      }
      return false;
    } catch (RuntimeException e) {
      for (OutboxMessage m : chunk) {
        fail(m, e, results, stoppedKeys);
      }
      return endsBatch(e);
    }
    Map<String, BatchResultErrorEntry> failed = new HashMap<>();
    response.failed().forEach(f -> failed.put(f.id(), f));
    Set<String> succeeded = new HashSet<>();
    response.successful().forEach(ok -> succeeded.add(ok.id()));
    boolean ended = false;
    for (int i = 0; i < chunk.size(); i++) {
      OutboxMessage m = chunk.get(i);
      String id = entries.get(i).id();
      BatchResultErrorEntry error = failed.get(id);
      if (error == null && succeeded.contains(id)) {
        if (!results.containsKey(m.id())) {
          results.put(m.id(), OutboxPublishResult.sent(m));
        }
        continue;
      }
      RuntimeException failure = error != null ? entryFailure(m, error)
          : new IllegalStateException("SQS answered neither success nor failure for outbox row " + m.id());
      fail(m, failure, results, stoppedKeys);
      ended |= endsBatch(failure);
    }
    return ended;
  }

  /** One row with {@code SendMessage}; returns whether the batch must end. */
  private boolean sendAlone(OutboxMessage m, SendMessageRequest request,
      Map<Long, OutboxPublishResult> results, Set<String> stoppedKeys) {
    try {
      client.sendMessage(request);
      results.put(m.id(), OutboxPublishResult.sent(m));
      return false;
    } catch (RuntimeException e) {
      fail(m, e, results, stoppedKeys);
      return endsBatch(e);
    }
  }

  /** The key's first failure is the row's result; a later one of a stopped key is a skip. */
  private static void fail(OutboxMessage m, Throwable failure, Map<Long, OutboxPublishResult> results,
      Set<String> stoppedKeys) {
    String key = m.orderingKey();
    if (key != null && !stoppedKeys.add(key)) {
      results.put(m.id(), OutboxPublishResult.skipped(m));
    } else {
      results.put(m.id(), OutboxPublishResult.failed(m, failure));
    }
  }

  /** SQS did not answer, failed on its side or throttled: the next requests would too. */
  private static boolean endsBatch(Throwable failure) {
    if (failure instanceof AwsServiceException aws) {
      return aws.statusCode() >= 500 || aws.isThrottlingException();
    }
    return failure instanceof SdkClientException;
  }

  private static SqsException entryFailure(OutboxMessage m, BatchResultErrorEntry error) {
    return (SqsException) SqsException.builder()
        .message("SQS refused outbox row " + m.id() + ": " + error.code() + " " + error.message())
        .statusCode(Boolean.TRUE.equals(error.senderFault()) ? 400 : 500)
        .awsErrorDetails(AwsErrorDetails.builder().errorCode(error.code()).errorMessage(error.message())
            .serviceName("Sqs").build())
        .build();
  }

  private static SendMessageBatchRequestEntry entry(String id, SendMessageRequest r) {
    return SendMessageBatchRequestEntry.builder().id(id).messageBody(r.messageBody())
        .messageAttributes(r.messageAttributes()).messageDeduplicationId(r.messageDeduplicationId())
        .messageGroupId(r.messageGroupId()).build();
  }

  /** What SQS counts against its size limit: the body and each attribute's name, type and value. */
  private static long size(SendMessageRequest r) {
    long size = r.messageBody().getBytes(StandardCharsets.UTF_8).length;
    for (Map.Entry<String, MessageAttributeValue> a : r.messageAttributes().entrySet()) {
      size += a.getKey().getBytes(StandardCharsets.UTF_8).length
          + a.getValue().dataType().getBytes(StandardCharsets.UTF_8).length
          + (a.getValue().stringValue() == null ? 0 : a.getValue().stringValue().getBytes(StandardCharsets.UTF_8).length);
    }
    return size;
  }

  /** The request for one row (also an entry of a batch's). */
  private static SendMessageRequest request(OutboxMessage message) {
    Map<String, MessageAttributeValue> attributes = new HashMap<>();
    message.headers().forEach((name, value) -> attributes.put(name, text(value)));
    attributes.put(OutboxMessage.KEY_HEADER, text(message.idempotencyKey()));
    String body = Utf8.decodeStrict(message.payload());
    if (body == null || !isXmlText(body)) {
      body = Base64.getEncoder().encodeToString(message.payload());
      attributes.put(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, text(SqsInboundMessage.BASE64));
    }
    if (attributes.size() > 10 && message.traceparent() != null) {
      attributes.remove(TraceContext.TRACEPARENT); // the trace context gives way to the row's own headers
    }
    if (attributes.size() > 10) {
      throw new NonRetryableException("SQS allows 10 message attributes, but outbox row "
          + message.id() + " needs " + attributes.size());
    }
    SendMessageRequest.Builder request = SendMessageRequest.builder()
        .queueUrl(message.destination()).messageBody(body).messageAttributes(attributes);
    if (message.destination().endsWith(".fifo")) {
      request.messageDeduplicationId(deduplicationId(message.idempotencyKey()))
          .messageGroupId(message.orderingKey() != null ? message.orderingKey() : message.idempotencyKey());
    }
    return request.build();
  }

  /** The key itself when SQS accepts it as a deduplication id, else its SHA-256 in hex. */
  static String deduplicationId(String key) {
    if (DEDUP_ID.matcher(key).matches()) {
      return key;
    }
    try {
      return HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** SQS bodies may hold only XML characters (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | supplementary). */
  private static boolean isXmlText(String body) {
    return body.codePoints().allMatch(c -> c == 0x9 || c == 0xA || c == 0xD
        || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || c >= 0x10000);
  }

  private static MessageAttributeValue text(String value) {
    return value.isEmpty()
        ? MessageAttributeValue.builder().dataType(SqsInboundMessage.EMPTY_STRING_TYPE).stringValue("-").build()
        : MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }
}
