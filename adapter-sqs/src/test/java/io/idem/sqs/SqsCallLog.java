package io.idem.sqs;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.SdkResponse;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequest;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityRequest;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.DeleteMessageRequest;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;

/**
 * Every SQS call a consumer's client made, in order, through the SDK's own {@link
 * ExecutionInterceptor} hook: what was received (message id, receive count, receipt handle), which
 * receipt handle got which visibility, what was deleted, and what failed. A test asserts on the
 * visibility calls, and prints the log when a wait on the broker times out, so that a failure
 * says what the consumer told SQS. Thread-safe.
 */
final class SqsCallLog implements ExecutionInterceptor {

  /** One visibility change the broker accepted: which receive's handle, to how many seconds. */
  record VisibilityChange(long atNanos, String receiptHandle, int seconds) {}

  private final long start = System.nanoTime();
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final List<VisibilityChange> changes = new CopyOnWriteArrayList<>();
  /** Empty receives since the last other line (collapsed into one line). */
  private int emptyReceives;

  @Override
  public void afterExecution(Context.AfterExecution context, ExecutionAttributes attributes) {
    SdkRequest request = context.request();
    SdkResponse response = context.response();
    long now = System.nanoTime();
    if (response instanceof ReceiveMessageResponse received) {
      if (!received.messages().isEmpty()) {
        List<String> got = new ArrayList<>();
        for (Message m : received.messages()) {
          got.add(m.messageId() + " count=" + m.attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT)
              + " handle=" + tail(m.receiptHandle()));
        }
        add(now, "ReceiveMessage -> " + got);
      } else {
        addEmptyReceive(now);
      }
    } else if (request instanceof ChangeMessageVisibilityRequest change) {
      changes.add(new VisibilityChange(now, change.receiptHandle(), change.visibilityTimeout()));
      add(now, "ChangeMessageVisibility handle=" + tail(change.receiptHandle()) + " to " + change.visibilityTimeout() + " s");
    } else if (request instanceof ChangeMessageVisibilityBatchRequest batch) {
      batch.entries().forEach(e -> changes.add(new VisibilityChange(now, e.receiptHandle(), e.visibilityTimeout())));
      add(now, "ChangeMessageVisibilityBatch " + batch.entries().stream()
          .map(e -> "handle=" + tail(e.receiptHandle()) + " to " + e.visibilityTimeout() + " s").toList());
    } else if (request instanceof DeleteMessageRequest delete) {
      add(now, "DeleteMessage handle=" + tail(delete.receiptHandle()));
    } else if (request instanceof DeleteMessageBatchRequest delete) {
      add(now, "DeleteMessageBatch " + delete.entries().size() + " message(s)");
    } else {
      add(now, request.getClass().getSimpleName().replace("Request", ""));
    }
  }

  @Override
  public void onExecutionFailure(Context.FailedExecution context, ExecutionAttributes attributes) {
    add(System.nanoTime(), context.request().getClass().getSimpleName().replace("Request", "") + " FAILED: "
        + context.exception());
  }

  /** The visibility changes SQS accepted, in order. */
  List<VisibilityChange> visibilityChanges() {
    return List.copyOf(changes);
  }

  /** The last {@code n} calls, one a line, with seconds since this log was made. */
  String describe(int n) {
    List<String> all = List.copyOf(lines);
    return String.join("\n", all.subList(Math.max(0, all.size() - n), all.size()));
  }

  private synchronized void add(long now, String line) {
    emptyReceives = 0;
    lines.add(String.format(Locale.ROOT, "  +%7.3f s %s", (now - start) / 1e9, line));
  }

  private synchronized void addEmptyReceive(long now) {
    String line = String.format(Locale.ROOT, "  +%7.3f s ReceiveMessage -> nothing (%d empty receive(s) in a row)",
        (now - start) / 1e9, ++emptyReceives);
    if (emptyReceives > 1) {
      lines.set(lines.size() - 1, line);
    } else {
      lines.add(line);
    }
  }

  private static String tail(String receiptHandle) {
    return receiptHandle.length() <= 12 ? receiptHandle : "…" + receiptHandle.substring(receiptHandle.length() - 12);
  }
}
