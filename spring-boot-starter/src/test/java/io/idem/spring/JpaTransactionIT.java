package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.KeyedMessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.Acknowledgement;
import jakarta.persistence.Entity;
import jakarta.persistence.EntityManager;
import jakarta.persistence.Id;
import jakarta.persistence.PersistenceContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * JPA: on Spring Boot's JpaTransactionManager, an entity the handler persists through the
 * application's EntityManager is flushed and committed by Idem's transaction together with the
 * marker, and a handler that persists and then throws leaves neither.
 */
@SpringBootTest(classes = JpaTransactionIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retention.enabled=false",
    "spring.autoconfigure.exclude=",
    "spring.jpa.hibernate.ddl-auto=create",
    "spring.jpa.open-in-view=false",
    "logging.level.org.hibernate=WARN"})
class JpaTransactionIT {
  @Autowired IdemPipelines pipelines;
  @Autowired RefundHandler handler;
  @Autowired JdbcTemplate jdbc;
  @Autowired PlatformTransactionManager transactionManager;

  private ProcessingOutcome process(String key, String body) {
    IdempotentConsumer<SqlSession> pipeline = pipelines.pipeline("refunds", handler);
    InboundMessage message = InboundMessage.builder("refunds", body.getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).build();
    return pipeline.process(message, new Acknowledgement() {
      @Override
      public void ack() {}

      @Override
      public void retry(Duration delay) {}

      @Override
      public void deadLetter(io.idem.DeadLetterReason reason) {}
    });
  }

  private int refunds(String key) {
    return jdbc.queryForObject("SELECT count(*) FROM refund WHERE id = ?", Integer.class, key);
  }

  private boolean processed(String key) {
    return pipelines.store().isProcessed(new IdempotencyKey("refunds", key, KeySource.HEADER));
  }

  @Test
  void theEntityCommitsWithTheMarkerOnTheJpaTransactionManager() {
    assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
    String key = "r-" + UUID.randomUUID();

    assertThat(process(key, "refund 5")).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(process(key, "refund 5")).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(refunds(key)).isEqualTo(1);
    assertThat(processed(key)).isTrue();
  }

  @Test
  void anEntityPersistedBeforeAFailureIsRolledBackWithTheMarker() {
    String key = "r-" + UUID.randomUUID();

    assertThat(process(key, "poison 6")).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(refunds(key)).isZero();
    assertThat(processed(key)).isFalse();
  }

  @Entity(name = "refund")
  public static class Refund {
    @Id String id;
    String body;

    protected Refund() {}

    Refund(String id, String body) {
      this.id = id;
      this.body = body;
    }
  }

  /** Persists a refund; a body starting with "poison" then fails (flushed first, so the row was written). */
  static class RefundHandler implements KeyedMessageHandler<SqlSession> {
    @PersistenceContext EntityManager entities;

    @Override
    public void handle(IdempotencyKey key, InboundMessage message, SqlSession session) {
      String body = new String(message.payload(), StandardCharsets.UTF_8);
      entities.persist(new Refund(key.value(), body));
      entities.flush();
      if (body.startsWith("poison")) {
        throw new IllegalStateException("injected failure after the flush of " + key.value());
      }
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    DataSource dataSource() {
      return PostgresFixture.shared().newSchemaDataSource("spring_jpa");
    }

    @Bean
    RefundHandler refundHandler() {
      return new RefundHandler();
    }
  }
}
