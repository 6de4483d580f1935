package io.idem.cli;

import io.idem.deadletters.JmsDeadLetters;
import io.idem.deadletters.KafkaDeadLetters;
import io.idem.deadletters.RabbitDeadLetters;
import io.idem.deadletters.SqsDeadLetters;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import io.idem.store.jdbc.DeadLetterDecisions;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Option;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;

/**
 * Where the dead letters are and where the store is: the options every {@code dead-letters}
 * command shares. Defaults come from the environment variables the tests and the main job use
 * ({@code IDEM_KAFKA_BOOTSTRAP}, {@code IDEM_RABBITMQ_URI}, {@code IDEM_SQS_ENDPOINT}, {@code
 * IDEM_JMS_URL}, {@code IDEM_JDBC_URL}, …).
 */
final class ConnectionOptions {

  /** The brokers, as {@code --broker} takes them. */
  enum Broker { kafka, rabbitmq, sqs, jms }

  @Option(names = {"--broker", "-b"}, required = true, paramLabel = "BROKER",
      description = "The broker: ${COMPLETION-CANDIDATES}.")
  Broker broker;

  @Option(names = {"--destination", "-d"}, required = true, paramLabel = "NAME",
      description = "The dead-letter destination: Kafka topic (orders.DLT), RabbitMQ queue (orders.dlq), SQS queue"
          + " URL or name, JMS queue.")
  String destination;

  @Option(names = "--source", paramLabel = "QUEUE",
      description = "RabbitMQ / SQS: the queue the dead letters came from (default: RabbitMQ the destination without"
          + " .dlq; SQS the one queue whose RedrivePolicy names the destination).")
  @Nullable String source;

  @Option(names = "--bootstrap-servers", paramLabel = "HOST:PORT", defaultValue = "${env:IDEM_KAFKA_BOOTSTRAP}",
      description = "Kafka bootstrap servers (default: $IDEM_KAFKA_BOOTSTRAP).")
  @Nullable String bootstrapServers;

  @Option(names = "--kafka-group", paramLabel = "GROUP", defaultValue = KafkaDeadLetters.DEFAULT_GROUP_ID,
      description = "Kafka: the tool's consumer group on the dead-letter topic (default: ${DEFAULT-VALUE}).")
  String kafkaGroup;

  @Option(names = "--kafka-config", paramLabel = "FILE",
      description = "Kafka: a client properties file (security, SASL).")
  @Nullable Path kafkaConfig;

  @Option(names = "--rabbitmq-uri", paramLabel = "URI", defaultValue = "${env:IDEM_RABBITMQ_URI}",
      description = "RabbitMQ: amqp://user:password@host:5672/vhost (default: $IDEM_RABBITMQ_URI).")
  @Nullable String rabbitmqUri;

  @Option(names = "--sqs-endpoint", paramLabel = "URL", defaultValue = "${env:IDEM_SQS_ENDPOINT}",
      description = "SQS: an endpoint other than AWS's (an emulator; default: $IDEM_SQS_ENDPOINT).")
  @Nullable String sqsEndpoint;

  @Option(names = "--sqs-region", paramLabel = "REGION", defaultValue = "${env:IDEM_SQS_REGION}",
      description = "SQS: the region (default: $IDEM_SQS_REGION, else the SDK's, else us-east-1).")
  @Nullable String sqsRegion;

  @Option(names = "--sqs-hold", paramLabel = "SECONDS", defaultValue = "300",
      description = "SQS: how long a command keeps the dead letters it received hidden (a killed command's come back"
          + " after that; default: ${DEFAULT-VALUE}).")
  int sqsHoldSeconds;

  @Option(names = "--jms-url", paramLabel = "URL", defaultValue = "${env:IDEM_JMS_URL}",
      description = "JMS (ActiveMQ Artemis): tcp://host:61616 (default: $IDEM_JMS_URL).")
  @Nullable String jmsUrl;

  @Option(names = "--jms-user", paramLabel = "USER", defaultValue = "${env:IDEM_JMS_USER}",
      description = "JMS user (default: $IDEM_JMS_USER).")
  @Nullable String jmsUser;

  @Option(names = "--jms-password", paramLabel = "PASSWORD", defaultValue = "${env:IDEM_JMS_PASSWORD}",
      description = "JMS password (default: $IDEM_JMS_PASSWORD).")
  @Nullable String jmsPassword;

  @Option(names = "--jdbc-url", paramLabel = "URL", defaultValue = "${env:IDEM_JDBC_URL}",
      description = "The processed-events store's database: PostgreSQL, jdbc:postgresql://host:5432/db[?currentSchema=s],"
          + " or MariaDB, jdbc:mariadb://host:3306/db"
          + " (default: $IDEM_JDBC_URL). Needed to replay and discard.")
  @Nullable String jdbcUrl;

  @Option(names = "--jdbc-user", paramLabel = "USER", defaultValue = "${env:IDEM_JDBC_USER}",
      description = "Database user (default: $IDEM_JDBC_USER).")
  @Nullable String jdbcUser;

  @Option(names = "--jdbc-password", paramLabel = "PASSWORD", defaultValue = "${env:IDEM_JDBC_PASSWORD}",
      description = "Database password (default: $IDEM_JDBC_PASSWORD).")
  @Nullable String jdbcPassword;

  @Option(names = "--table", paramLabel = "TABLE", defaultValue = "idem_processed_events",
      description = "The processed-events table (default: ${DEFAULT-VALUE}).")
  String table;

  @Option(names = "--actions-table", paramLabel = "TABLE", defaultValue = DeadLetterActions.DEFAULT_TABLE,
      description = "The record of replays and discards (default: ${DEFAULT-VALUE}; created by"
          + " db/migration/idem/V7__dead_letter_actions.sql).")
  String actionsTable;

  @Option(names = "--create-actions-table", description = "Create the record's table when it is missing.")
  boolean createActionsTable;

  @Option(names = "--max-scan", paramLabel = "N", defaultValue = "10000",
      description = "Most dead letters read per command (default: ${DEFAULT-VALUE}).")
  int maxScan;

  @Option(names = {"--output", "-o"}, paramLabel = "FORMAT", defaultValue = "table",
      description = "table or json (default: ${DEFAULT-VALUE}).")
  String output;

  private @Nullable SqsClient sqs;

  boolean json() {
    String format = output.toLowerCase(Locale.ROOT);
    if (!format.equals("table") && !format.equals("json")) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--output must be table or json, but was '" + output + "'");
    }
    return format.equals("json");
  }

  /**
   * The destination, connected.
   *
   * @param to where replays go instead of each dead letter's source, or {@code null}
   */
  DeadLetterDestination destination(@Nullable String to) {
    return switch (broker) {
      case kafka -> KafkaDeadLetters.builder(required(bootstrapServers, "--bootstrap-servers", "IDEM_KAFKA_BOOTSTRAP"),
          destination).groupId(kafkaGroup).target(to).properties(kafkaProperties()).build();
      case rabbitmq -> RabbitDeadLetters.builder(required(rabbitmqUri, "--rabbitmq-uri", "IDEM_RABBITMQ_URI"), destination)
          .sourceQueue(source).target(to).build();
      case sqs -> sqsDestination(to);
      case jms -> {
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(required(jmsUrl, "--jms-url", "IDEM_JMS_URL"));
        yield JmsDeadLetters.builder(factory, destination).target(to)
            .credentials(blankToNull(jmsUser), blankToNull(jmsPassword)).build();
      }
    };
  }

  private DeadLetterDestination sqsDestination(@Nullable String to) {
    SqsClient client = sqs();
    if (sqsHoldSeconds < 1 || sqsHoldSeconds > 43_200) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--sqs-hold must be in [1, 43200] seconds, but was " + sqsHoldSeconds);
    }
    return SqsDeadLetters.builder(client, queueUrl(client, destination)).sourceQueue(source).target(to)
        .holdFor(java.time.Duration.ofSeconds(sqsHoldSeconds)).build();
  }

  private static String queueUrl(SqsClient client, String nameOrUrl) {
    if (nameOrUrl.startsWith("http://") || nameOrUrl.startsWith("https://")) {
      return nameOrUrl;
    }
    try {
      return client.getQueueUrl(r -> r.queueName(nameOrUrl)).queueUrl();
    } catch (QueueDoesNotExistException e) {
      throw new CliFailure(IdemCli.EXIT_FAILURE, "SQS queue '" + nameOrUrl + "' does not exist");
    } catch (SdkException e) {
      throw new CliFailure(IdemCli.EXIT_FAILURE, "could not look up SQS queue '" + nameOrUrl + "': " + e.getMessage());
    }
  }

  private SqsClient sqs() {
    if (sqs == null) {
      SqsClientBuilder b = SqsClient.builder().httpClient(UrlConnectionHttpClient.create());
      String region = blankToNull(sqsRegion);
      if (region == null && System.getenv("AWS_REGION") == null && System.getProperty("aws.region") == null) {
        region = "us-east-1";
      }
      if (region != null) {
        b.region(Region.of(region));
      }
      String endpoint = blankToNull(sqsEndpoint);
      if (endpoint != null) {
        b.endpointOverride(URI.create(endpoint));
        if (System.getenv("AWS_ACCESS_KEY_ID") == null && System.getProperty("aws.accessKeyId") == null) {
          // an emulator (ElasticMQ, LocalStack) takes any credentials
          b.credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")));
        }
      } else {
        b.credentialsProvider(DefaultCredentialsProvider.builder().build());
      }
      sqs = b.build();
    }
    return sqs;
  }

  void closeClients() {
    if (sqs != null) {
      sqs.close();
    }
  }

  private Properties kafkaProperties() {
    Properties p = new Properties();
    if (kafkaConfig != null) {
      try (InputStream in = Files.newInputStream(kafkaConfig)) {
        p.load(in);
      } catch (IOException e) {
        throw new CliFailure(IdemCli.EXIT_USAGE, "--kafka-config: cannot read " + kafkaConfig + ": " + e.getMessage());
      }
    }
    return p;
  }

  /** Whether a store was given. */
  boolean hasStore() {
    return blankToNull(jdbcUrl) != null;
  }

  DataSource dataSource(String needs) {
    String url = blankToNull(jdbcUrl);
    if (url == null) {
      throw new CliFailure(IdemCli.EXIT_USAGE, needs + " needs the processed-events store: give --jdbc-url (or"
          + " $IDEM_JDBC_URL)");
    }
    if (url.startsWith("jdbc:mariadb:")) {
      return mariaDbDataSource(url);
    }
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(url);
    if (blankToNull(jdbcUser) != null) {
      ds.setUser(jdbcUser);
    }
    if (blankToNull(jdbcPassword) != null) {
      ds.setPassword(jdbcPassword);
    }
    ds.setConnectTimeout(5);
    ds.setApplicationName("idem-cli");
    return ds;
  }

  /** MariaDB Connector/J on {@code url} (jdbc:mariadb://host:3306/db), a 5 s connect timeout. */
  private DataSource mariaDbDataSource(String url) {
    try {
      org.mariadb.jdbc.MariaDbDataSource ds = new org.mariadb.jdbc.MariaDbDataSource(
          url + (url.contains("?") ? "&" : "?") + "connectTimeout=5000");
      if (blankToNull(jdbcUser) != null) {
        ds.setUser(jdbcUser);
      }
      if (blankToNull(jdbcPassword) != null) {
        ds.setPassword(jdbcPassword);
      }
      return ds;
    } catch (java.sql.SQLException e) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--jdbc-url " + url + " is not a MariaDB URL: " + e.getMessage());
    }
  }

  DeadLetterDecisions decisions(DataSource ds) {
    return DeadLetterDecisions.of(ds, table);
  }

  DeadLetterActions actions(DataSource ds) {
    return DeadLetterActions.builder(ds).tableName(actionsTable).createTableIfMissing(createActionsTable).build();
  }

  private static String required(@Nullable String value, String option, String env) {
    String v = blankToNull(value);
    if (v == null) {
      throw new CliFailure(IdemCli.EXIT_USAGE, option + " is required for this broker (or $" + env + ")");
    }
    return v;
  }

  static @Nullable String blankToNull(@Nullable String value) {
    return value == null || value.isBlank() ? null : value;
  }
}
