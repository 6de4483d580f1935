package io.idem.spring;

import java.util.concurrent.CompletionException;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageResponse;

/**
 * The two calls of {@link SqsClient} the outbox's {@code SqsOutboxPublisher} makes, {@code
 * sendMessage} and {@code sendMessageBatch}, on the application's {@link SqsAsyncClient} (Spring Cloud AWS creates only the
 * asynchronous one): each waits for its answer and rethrows its failure. Every other {@code SqsClient}
 * method is the SDK interface's default ({@code UnsupportedOperationException}); {@link #close()}
 * leaves the application's client open. Thread-safe (the SDK client is).
 */
final class SqsAsyncSender implements SqsClient {
  private final SqsAsyncClient client;

  SqsAsyncSender(SqsAsyncClient client) {
    this.client = client;
  }

  @Override
  public SendMessageResponse sendMessage(SendMessageRequest request) {
    try {
      return client.sendMessage(request).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw e;
    }
  }

  @Override
  public SendMessageBatchResponse sendMessageBatch(SendMessageBatchRequest request) {
    try {
      return client.sendMessageBatch(request).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw e;
    }
  }

  @Override
  public String serviceName() {
    return SqsClient.SERVICE_NAME;
  }

  @Override
  public void close() {
    // the application's client
  }
}
