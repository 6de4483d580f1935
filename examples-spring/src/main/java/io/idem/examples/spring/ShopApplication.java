package io.idem.examples.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A shop on Spring Boot whose two consumers Idem makes idempotent from configuration alone
 * ({@code application.yml}): orders from a Kafka topic ({@link OrderHandler}) and payments from a
 * RabbitMQ queue ({@link PaymentHandler}). Each handler writes with the application's {@code
 * JdbcTemplate}, in the transaction Idem opens through Spring's transaction manager and commits
 * with its processed-events marker; the message is acknowledged after that commit. A redelivered
 * message is skipped, one that keeps failing goes to the dead-letter topic or queue after {@code
 * idem.retry.max-attempts}. Run it against a PostgreSQL, a Kafka and a RabbitMQ with the
 * addresses of {@code application.yml} (or override them: {@code --spring.datasource.url=…}).
 */
@SpringBootApplication
public class ShopApplication {

  public static void main(String[] args) {
    SpringApplication.run(ShopApplication.class, args);
  }
}
