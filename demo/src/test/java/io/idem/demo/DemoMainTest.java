package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

class DemoMainTest {

  /** What a run of the command line printed and returned; usage errors return before any broker starts. */
  private record Run(int status, String out, List<String> err) {}

  private static Run run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringWriter err = new StringWriter();
    CommandLine commandLine = DemoMain.commandLine(new DemoMain(new PrintStream(out, true, StandardCharsets.UTF_8)));
    commandLine.setErr(new PrintWriter(err, true));
    commandLine.setColorScheme(CommandLine.Help.defaultColorScheme(CommandLine.Help.Ansi.OFF));
    int status = commandLine.execute(args);
    return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString().lines().toList());
  }

  private static DemoMain parsed(String... args) {
    DemoMain demo = new DemoMain(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    DemoMain.commandLine(demo).parseArgs(args);
    demo.validate();
    return demo;
  }

  @Test
  void brokerTogetherWithAMigrationIsAUsageError() {
    Run run = run("--broker", "sqs", "--migrate-from", "rabbitmq", "--migrate-to", "kafka");

    assertThat(run.status()).isEqualTo(2);
    assertThat(run.err()).containsExactly(
        "idem-demo: --broker does not go with --migrate-from/--migrate-to: a migration runs on the two brokers"
            + " they name",
        "try --help for the options and examples");
  }

  @Test
  void theDatabaseIsPostgresqlOrMariadbInAnyCase() {
    assertThat(parsed().database).isEqualTo("postgresql");
    DemoMain demo = parsed("--database", "MariaDB");
    assertThat(demo.database).isEqualTo("mariadb");
    assertThat(run("--database", "oracle").err().get(0))
        .isEqualTo("idem-demo: --database must be one of [postgresql, mariadb], but was 'oracle'");
  }

  @Test
  void eachUsageErrorPrintsTheOneErrorAndAHintNotTheUsage() {
    for (String[] args : List.of(
        new String[] {"--broker", "kafak"},
        new String[] {"--events", "0"},
        new String[] {"--timeout", "ten minutes"},
        new String[] {"--migrate-from", "kafka"},
        new String[] {"--migrate-from", "kafka", "--migrate-to", "KAFKA"},
        new String[] {"--database", "oracle"},
        new String[] {"--no-such-option"})) {
      Run run = run(args);

      assertThat(run.status()).as("%s", List.of(args)).isEqualTo(2);
      assertThat(run.err()).as("%s", List.of(args)).hasSize(2);
      assertThat(run.err().get(0)).startsWith("idem-demo: ");
      assertThat(run.err().get(1)).isEqualTo("try --help for the options and examples");
      assertThat(run.out()).isEmpty();
    }
  }

  @Test
  void anUnknownBrokerIsNamedWithTheChoices() {
    assertThat(run("--broker", "kafak").err().get(0))
        .isEqualTo("idem-demo: --broker must be one of [kafka, rabbitmq, sqs, jms] or all, but was 'kafak'");
  }

  @Test
  void brokerNamesAreCaseInsensitive() {
    assertThat(parsed("--broker", "RabbitMQ").broker).isEqualTo("rabbitmq");
    assertThat(parsed("--broker", "ALL").broker).isEqualTo("all");
    DemoMain migration = parsed("--migrate-from", "SQS", "--migrate-to", "Jms");
    assertThat(migration.migrateFrom).isEqualTo("sqs");
    assertThat(migration.migrateTo).isEqualTo("jms");
  }

  @Test
  void batchDefaultsToTheAdaptersDefaultAndMustBePositive() {
    assertThat(parsed().batch).as("not given: each adapter's default").isNull();
    assertThat(parsed("--batch", "50").batch).isEqualTo(50);
    assertThat(run("--batch", "0").err().get(0)).isEqualTo("idem-demo: --batch must be >= 1, but was 0");
    assertThat(run("--batch", "5", "--migrate-from", "kafka", "--migrate-to", "sqs").status()).isEqualTo(2);
  }

  @Test
  void receiptsAreOnByDefaultAndNoReceiptsTurnsThemOff() {
    assertThat(parsed().receipts).isTrue();
    assertThat(parsed("--receipts").receipts).isTrue();
    assertThat(parsed("--no-receipts").receipts).isFalse();
    StringWriter help = new StringWriter();
    DemoMain.commandLine(new DemoMain()).usage(new PrintWriter(help), CommandLine.Help.Ansi.OFF);
    assertThat(help.toString()).contains("--[no-]receipts").contains("receipts published");
  }

  @Test
  void theBrokerDefaultsToKafka() {
    assertThat(parsed().broker).isEqualTo("kafka");
  }

  @Test
  void timeoutTakesShortFormsAndIso8601() {
    assertThat(parsed("--timeout", "10m").timeout).isEqualTo(Duration.ofMinutes(10));
    assertThat(parsed("--timeout", "90s").timeout).isEqualTo(Duration.ofSeconds(90));
    assertThat(parsed("--timeout", "1h").timeout).isEqualTo(Duration.ofHours(1));
    assertThat(parsed("--timeout", "PT10M").timeout).isEqualTo(Duration.ofMinutes(10));
    assertThat(parsed().timeout).isEqualTo(Duration.ofMinutes(10));
  }

  @Test
  void aTimeoutThatIsNoDurationIsAnsweredWithExamples() {
    assertThat(run("--timeout", "10 min").err().get(0))
        .contains("'10 min' is not a duration")
        .contains("10m")
        .contains("PT10M");
    assertThatThrownBy(() -> parsed("--timeout", "0s")).hasMessageContaining("--timeout must be positive");
  }

  @Test
  void helpSaysHowTimeoutIsWrittenAndHowEachFigureIsCounted() {
    StringWriter help = new StringWriter();
    DemoMain.commandLine(new DemoMain()).usage(new PrintWriter(help), CommandLine.Help.Ansi.OFF);

    assertThat(help.toString())
        .contains("90s, 10m, 1h")
        .contains("PT10M")
        .contains("rows in the business table")
        .contains("estimate");
    assertThat(help.toString().lines()).allSatisfy(line -> assertThat(line.length()).isLessThanOrEqualTo(80));
  }

  @Test
  void theWebhooksSourceIsCaseInsensitiveAndRefusesBrokerOptions() {
    assertThat(parsed("--source", "Webhooks").source).isEqualTo("webhooks");
    assertThat(parsed().source).isEqualTo("broker");
    assertThat(run("--source", "carrier-pigeon").err().get(0))
        .isEqualTo("idem-demo: --source must be broker or webhooks, but was 'carrier-pigeon'");
    assertThat(run("--source", "webhooks", "--broker", "kafka").err().get(0))
        .startsWith("idem-demo: --source webhooks does not go with --broker, --batch or --migrate-from/--migrate-to");
    assertThat(run("--source", "webhooks", "--batch", "10").status()).isEqualTo(2);
  }

  @ParameterizedTest
  @ValueSource(strings = {"postgresql", "mariadb"})
  void theWebhooksSourceAppliesEveryOrderOnceThroughAReceiverKillOnEitherDatabase(String database) throws Exception {
    String before = System.getProperty(DemoDatabase.DATABASE_PROPERTY);
    // 150 events (30 producer retries) posted by 4 senders, the receiver's JVM SIGKILLed once, restarted
    Run run = run("--source", "webhooks", "--database", database, "--events", "150", "--crashes", "1",
        "--seed", "26");
    try {
      assertThat(run.status()).as(run.out()).isZero();
      assertThat(run.out())
          .contains(database.equals("mariadb") ? "MariaDB database idem_demo_webhooks_" : "PostgreSQL schema idem_demo_webhooks_")
          .contains("receiver killed (SIGKILL)");
      assertThat(run.out().lines()).anySatisfy(line -> assertThat(line).contains("consumer crashes").contains("1/1"))
          .anySatisfy(line -> assertThat(line).contains("doubled effects").contains(" 0 "))
          .anySatisfy(line -> assertThat(line).contains("missing effects").contains(" 0 "));
      assertThat(System.getProperty(DemoDatabase.DATABASE_PROPERTY)).as("the run's database, restored after it")
          .isEqualTo(before);
    } finally {
      dropSchemaPrintedBy(run.out());
    }
  }

  @Test
  void aRealRunThatHitsItsTimeoutEndsTimedOutWithItsOwnStatusNotAsLostData() throws Exception {
    // 200 orders, three consumer kills and three relay kills cannot be done in 1 s: the timeout runs out
    Run run = run("--broker", "kafka", "--events", "200", "--timeout", "1s", "--seed", "31");
    try {
      assertThat(run.status()).as(run.out()).isEqualTo(Ledger.EXIT_TIMED_OUT);
      assertThat(run.out()).contains("timed out after 1s").contains("TIMED OUT after 1s: ").contains("nothing doubled")
          .doesNotContain("NOT SENT").doesNotContain("missing effects").doesNotContain("missing receipts")
          .doesNotContain("FAILED");
      assertThat(run.out().lines()).anySatisfy(line -> assertThat(line).contains("result").contains("TIMED OUT"));
    } finally {
      dropSchemaPrintedBy(run.out()); // a run that did not end OK keeps its schema for a look; the test does not
    }
  }

  /** Drops the schemas (MariaDB: databases) a run printed: one that did not end OK keeps its own. */
  private static void dropSchemaPrintedBy(String out) throws java.sql.SQLException {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("PostgreSQL schema (idem_demo_[a-z0-9_]+) ").matcher(out);
    while (m.find()) {
      io.idem.fixtures.PostgresFixture pg = io.idem.fixtures.PostgresFixture.shared();
      try (java.sql.Connection c = java.sql.DriverManager.getConnection(pg.jdbcUrl(), pg.user(), pg.password());
          java.sql.Statement st = c.createStatement()) {
        st.execute("DROP SCHEMA IF EXISTS " + m.group(1) + " CASCADE");
      }
    }
    m = java.util.regex.Pattern.compile("MariaDB database (idem_demo_[a-z0-9_]+) ").matcher(out);
    while (m.find()) {
      io.idem.fixtures.MariaDbFixture maria = io.idem.fixtures.MariaDbFixture.shared();
      try (java.sql.Connection c = java.sql.DriverManager.getConnection(maria.jdbcUrl(), maria.user(), maria.password());
          java.sql.Statement st = c.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS `" + m.group(1) + "`");
      }
    }
  }

  /** A port nothing listens on: one this test bound and closed again. */
  private static int closedPort() throws java.io.IOException {
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  @Test
  void noRabbitMqAtTheGivenUriIsOneLineSayingWhatWasTriedAndHowToFixItWithStatus2() throws Exception {
    String uri = "amqp://guest:secret@127.0.0.1:" + closedPort() + "/%2F";

    Run run = run("--broker", "rabbitmq", "--rabbitmq-uri", uri, "--events", "10");

    assertThat(run.status()).isEqualTo(2);
    assertThat(run.err()).hasSize(1);
    assertThat(run.err().get(0)).startsWith("idem-demo: no RabbitMQ at --rabbitmq-uri amqp://guest:***@127.0.0.1:")
        .contains("start RabbitMQ").contains("--rabbitmq-uri").doesNotContain("secret");
    assertThat(run.out()).isEmpty();
  }

  @Test
  void aRabbitMqUriThatIsNoUriIsOneLineToo() {
    Run run = run("--broker", "rabbitmq", "--rabbitmq-uri", "http://not-amqp");

    assertThat(run.status()).isEqualTo(2);
    assertThat(run.err()).singleElement().asString().startsWith("idem-demo: --rabbitmq-uri http://not-amqp is not an"
        + " AMQP URI");
  }

  @Test
  void noPostgresAtIdemPostgresUrlIsOneLineWithStatus2NotAnotherPostgres() throws Exception {
    // the URL comes from the environment: a child JVM gets one pointing at a closed port
    String url = "jdbc:postgresql://127.0.0.1:" + closedPort() + "/test";
    try (io.idem.fixtures.ChildJvm child = io.idem.fixtures.ChildJvm.start("demo", DemoMain.class, List.of(),
        List.of("--broker", "kafka", "--events", "10"), java.util.Map.of("IDEM_POSTGRES_URL", url), line -> { })) {
      int status = child.waitFor(Duration.ofSeconds(60));

      List<String> errors = child.lines().stream().filter(l -> l.startsWith("idem-demo: ")).toList();
      assertThat(status).as("%s", child.lines()).isEqualTo(2);
      assertThat(errors).as("%s", child.lines()).singleElement().asString()
          .contains("PostgreSQL at IDEM_POSTGRES_URL=" + url).contains("does not answer")
          .contains("start PostgreSQL there").contains("unset it");
      assertThat(child.lines()).as("no stack trace").noneMatch(l -> l.trim().startsWith("at ") || l.contains("Exception in"));
      assertThat(child.lines()).as("no broker started").noneMatch(l -> l.startsWith("[kafka]"));
    }
  }
}
