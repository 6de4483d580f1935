package io.idem.spring.http;

import io.idem.http.WebhookHandler;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

/**
 * The application of {@link IdempotentRequestIT}: a {@code @RestController} with {@link
 * IdempotentRequest} methods writing with {@code JdbcTemplate}, and a webhook handler bean for
 * {@code idem.http.webhooks.stripe}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(HttpApp.Orders.class)
public class HttpApp {
  /** When set, {@code /orders} waits on it after its insert (holding the key's transaction). */
  static volatile CountDownLatch hold;
  static volatile CountDownLatch entered;

  @Bean
  WebhookHandler<SqlSession> paymentHandler(JdbcTemplate jdbc) {
    return (event, session) -> jdbc.update("INSERT INTO payments (event_id) VALUES (?)", event.id());
  }

  @RestController
  static class Orders {
    @Autowired JdbcTemplate jdbc;

    @PostMapping("/orders")
    @IdempotentRequest
    ResponseEntity<Map<String, Object>> create(@RequestBody Map<String, Object> order) throws InterruptedException {
      jdbc.update("INSERT INTO orders (item) VALUES (?)", String.valueOf(order.get("item")));
      Long id = jdbc.queryForObject("SELECT currval(pg_get_serial_sequence('orders', 'id'))", Long.class);
      CountDownLatch entering = entered;
      if (entering != null) {
        entering.countDown();
      }
      CountDownLatch waiting = hold;
      if (waiting != null) {
        waiting.await(30, TimeUnit.SECONDS);
      }
      if ("refused".equals(order.get("item"))) {
        throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "item refused");
      }
      return ResponseEntity.status(HttpStatus.CREATED)
          .header("Location", "/orders/" + id)
          .body(Map.of("id", id, "item", String.valueOf(order.get("item")), "nonce", UUID.randomUUID().toString()));
    }

    @PostMapping("/lock-timeout")
    @IdempotentRequest(consumerGroup = "lock-timeout")
    Map<String, Object> lockTimeout(@RequestBody Map<String, Object> ignored) {
      jdbc.update("INSERT INTO orders (item) VALUES (?)", "lock-timeout");
      return Map.of("lock_timeout", String.valueOf(jdbc.queryForObject("SHOW lock_timeout", String.class)));
    }

    @PostMapping("/notes")
    @IdempotentRequest(consumerGroup = "notes", keyRequired = false)
    Map<String, Object> note(@RequestBody Map<String, Object> note) {
      jdbc.update("INSERT INTO orders (item) VALUES (?)", "note:" + note.get("text"));
      return Map.of("saved", true);
    }
  }
}
