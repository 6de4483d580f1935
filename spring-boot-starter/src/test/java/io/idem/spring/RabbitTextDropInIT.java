package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterReason;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@code @Idempotent} on a {@code @RabbitListener} written as Spring users write one: {@code
 * @Payload String}, the key from a {@code @Header} marked {@link IdempotencyKey}, {@code
 * MessageHeaders} ({@link RabbitDropInApp}). The drop-in contract holds as for the {@code Message}
 * form; a message the container cannot convert for the method (here: without the required header)
 * is dead-lettered, never dropped.
 */
class RabbitTextDropInIT extends RabbitDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(TEXTS, key, body, true);
  }

  @Test
  void aMessageTheContainerCannotConvertForTheMethodIsDeadLetteredNotDropped() {
    String key = "k-" + UUID.randomUUID();
    org.springframework.amqp.core.MessageProperties properties = new org.springframework.amqp.core.MessageProperties();
    String id = UUID.randomUUID().toString();
    properties.setMessageId(id);
    properties.setContentType(org.springframework.amqp.core.MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
    template.send("", TEXTS, new org.springframework.amqp.core.Message(("pay " + key).getBytes(), properties));

    await().atMost(WAIT).until(() -> deadLetterCopies.byMessageId(id) != null);
    assertThat(deadLetterCopies.byMessageId(id)).containsKey(DeadLetterReason.HEADER_CAUSE);
    assertThat(payments.runs(key)).isZero();
  }
}
