package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.cli.IdemCli;
import io.idem.demo.DeadLetterTool;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Outbound;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.testkit.OutcomeRecorder;
import jakarta.jms.Connection;
import jakarta.jms.Session;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * The dead-letter tool ({@code idem-cli dead-letters}, issue 28) on the four real brokers and the
 * real PostgreSQL, against dead letters a real Idem consumer made: orders whose handler fails
 * non-retryably while a switch is on are dead-lettered with their reason; then the switch is turned
 * off and the tool lists, shows, replays and discards them while the consumer keeps running.
 *
 * <ul>
 *   <li>list groups them and show prints the reason and payload; discard records who and why and
 *       removes exactly the one selected;
 *   <li>a replay applies each order once; a key applied meanwhile (the producer sent it again) is a
 *       {@code DUPLICATE}; replaying the same dead letters twice ({@code --keep}, then again)
 *       applies nothing twice;
 *   <li>the loop guard refuses a message replayed and dead-lettered again, {@code --force} replays it;
 *   <li>the tool SIGKILLed between a stored copy and the removal of its dead letter loses no dead
 *       letter, and the next replay applies nothing twice;
 *   <li>bad input — an unknown broker, a destination that does not exist, a selection matching
 *       nothing, a dead letter the broker made without Idem's headers, a source that is gone — is
 *       one clear line and a non-zero status, and removes nothing.
 * </ul>
 */
class DeadLetterToolIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(90);
  private static final ObjectMapper JSON = new ObjectMapper();

  private DemoBroker broker;
  private String name;
  private ItDatabase db;
  private String destination;
  private String group;
  private String run;
  private BrokerConsumer consumer;
  private final OutcomeRecorder outcomes = new OutcomeRecorder();
  private final AtomicBoolean failing = new AtomicBoolean(true);
  private final Set<String> failingKeys = Collections.synchronizedSet(new HashSet<>());
  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    if (consumer != null) {
      consumer.close();
    }
    for (AutoCloseable c : closing) {
      c.close();
    }
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      broker.deleteDestination(destination);
      broker.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void listGroupsShowExplainsAndDiscardRemovesOneWithARecord(String brokerName) throws Exception {
    open(brokerName, "list");
    List<String> keys = deadLetter(3);

    Cli list = cli("list", "--messages");
    assertThat(list.exit).as(list.toString()).isZero();
    assertThat(list.out).contains("3 dead letters in ", deadLetterName(), "1 group", "NON_RETRYABLE",
        NonRetryableException.class.getName(), group);
    keys.forEach(k -> assertThat(list.out).contains(k));

    JsonNode json = listJson();
    assertThat(json.get("total").asInt()).isEqualTo(3);
    assertThat(json.get("groups")).singleElement().satisfies(g -> {
      assertThat(g.get("count").asInt()).isEqualTo(3);
      assertThat(g.get("cause").asText()).isEqualTo("NON_RETRYABLE");
      assertThat(g.get("consumerGroup").asText()).isEqualTo(group);
    });
    String id = idOf(json, keys.get(0));

    Cli show = cli("show", id);
    assertThat(show.exit).as(show.toString()).isZero();
    assertThat(show.out).contains(keys.get(0), "NON_RETRYABLE", "cannot be charged", "\"orderId\":\"" + keys.get(0));
    Cli redacted = cli("show", id, "--redact");
    assertThat(redacted.out).contains("<redacted: ").doesNotContain("\"orderId\"");

    Cli noReason = cli("discard", "--id", id);
    assertThat(noReason.exit).as("discard without --reason").isEqualTo(2);
    Cli discard = cli("discard", "--id", id, "--reason", "test order, never real", "--operator", "alice");
    assertThat(discard.exit).as(discard.toString()).isZero();
    assertThat(discard.out).contains("DISCARDED", id);
    assertThat(remainingKeys()).containsExactlyInAnyOrder(keys.get(1), keys.get(2));
    assertThat(strings("SELECT action || ' ' || operator || ' ' || reason || ' ' || idempotency_key FROM"
        + " idem_dead_letter_actions WHERE dead_letter_id = ?", id))
        .containsExactly("DISCARDED alice test order, never real " + keys.get(0));
    assertThat(db.effects(keys.get(0))).as("a discarded order is not applied").isZero();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void aReplayAppliesEachOnceAnAppliedKeyIsADuplicateAndReplayingTwiceAppliesNothingTwice(String brokerName)
      throws Exception {
    open(brokerName, "replay");
    List<String> keys = deadLetter(3);
    failing.set(false); // the handler is fixed
    resendByProducer(keys.get(0)); // the producer sent one of them again meanwhile: applied by that copy
    await("the re-sent order applied").atMost(TIMEOUT).until(() -> db.effects(keys.get(0)) == 1);

    Cli dry = cli("replay", "--all", "--dry-run");
    assertThat(dry.exit).as(dry.toString()).isZero();
    assertThat(dry.out).contains("WOULD_REPLAY", "applied meanwhile");
    assertThat(remainingKeys()).hasSize(3);

    long duplicates = outcomes.count(ProcessingOutcome.DUPLICATE);
    Cli kept = cli("replay", "--all", "--keep", "--rate", "0");
    assertThat(kept.exit).as(kept.toString()).isZero();
    assertThat(kept.out).contains("COPIED");
    await("each order applied").atMost(TIMEOUT)
        .until(() -> keys.stream().allMatch(k -> db.effects(k) == 1)
            && outcomes.count(ProcessingOutcome.DUPLICATE) >= duplicates + 1);
    assertThat(remainingKeys()).as("kept").hasSize(3);

    Cli again = cli("replay", "--all");
    assertThat(again.exit).as(again.toString()).isZero();
    assertThat(again.out).contains("REPLAYED");
    await("the second replay's copies skipped as duplicates").atMost(TIMEOUT)
        .until(() -> outcomes.count(ProcessingOutcome.DUPLICATE) >= duplicates + 4);
    assertThat(remainingKeys()).isEmpty();
    keys.forEach(k -> assertThat(db.effects(k)).as("effects of " + k).isEqualTo(1));
    assertThat(db.doubled()).isZero();

    Cli nothing = cli("replay", "--all");
    assertThat(nothing.exit).as("nothing left to replay").isEqualTo(3);
    assertThat(strings("SELECT action FROM idem_dead_letter_actions WHERE ? IS NOT NULL ORDER BY id", ""))
        .containsExactly("COPIED", "COPIED", "COPIED", "REPLAYED", "REPLAYED", "REPLAYED");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void theLoopGuardRefusesAMessageReplayedAndDeadLetteredAgainUnlessForced(String brokerName) throws Exception {
    open(brokerName, "loop");
    String key = deadLetter(1).get(0); // the handler stays broken

    Cli first = cli("replay", "--all", "--max-replays", "1");
    assertThat(first.exit).as(first.toString()).isZero();
    await("dead-lettered again, replayed once").atMost(TIMEOUT).until(() -> replayCounts().equals(List.of(1)));

    Cli refused = cli("replay", "--all", "--max-replays", "1");
    assertThat(refused.exit).as(refused.toString()).isEqualTo(1);
    assertThat(refused.err).contains("loop guard", "replayed 1 time already");
    assertThat(replayCounts()).as("refused, not touched").containsExactly(1);

    Cli forced = cli("replay", "--all", "--max-replays", "1", "--force");
    assertThat(forced.exit).as(forced.toString()).isZero();
    await("dead-lettered a third time, replayed twice").atMost(TIMEOUT).until(() -> replayCounts().equals(List.of(2)));
    assertThat(db.effects(key)).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void theToolKilledMidReplayLosesNoDeadLetterAndAppliesNothingTwice(String brokerName) throws Exception {
    open(brokerName, "crash");
    List<String> keys = deadLetter(3);
    failing.set(false);

    List<String> args = new ArrayList<>(List.of("2", "dead-letters", "replay", "--all", "--rate", "0"));
    args.addAll(commonArgs());
    ChildJvm tool = ChildJvm.start("idem-cli", DeadLetterToolCrashChild.class, List.of("-Xmx256m"), args, Map.of(),
        line -> System.out.println("  " + line));
    closing.add(tool);
    await("the second copy stored").atMost(TIMEOUT).until(() -> tool.printed(DeadLetterToolCrashChild.REPUBLISHED)
        || !tool.isAlive());
    assertThat(tool.printed(DeadLetterToolCrashChild.REPUBLISHED)).as(String.join("\n", tool.lines())).isTrue();
    tool.kill(); // SIGKILL, after the broker stored the second copy and before its dead letter was removed

    // nothing lost: the killed one and the untouched one are still there (on SQS once --sqs-hold ran out)
    await("the dead letters the killed tool held").atMost(TIMEOUT).until(() -> remainingKeys().size() >= 2);
    Cli rerun = cli("replay", "--all");
    assertThat(rerun.exit).as(rerun.toString()).isZero();
    await("every order applied").atMost(TIMEOUT).until(() -> keys.stream().allMatch(k -> db.effects(k) >= 1));
    await("every copy settled").atMost(TIMEOUT).until(() -> broker.pending(destination, group) == 0);
    assertThat(remainingKeys()).isEmpty();
    keys.forEach(k -> assertThat(db.effects(k)).as("effects of " + k).isEqualTo(1));
    assertThat(db.doubled()).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void badInputIsOneClearLineAndANonZeroStatusAndRemovesNothing(String brokerName) throws Exception {
    open(brokerName, "bad");
    List<String> keys = deadLetter(1);
    String brokerMade = publishBrokerMadeDeadLetter();
    await("the broker-made dead letter is there").atMost(TIMEOUT).until(() -> listJson().get("total").asInt() == 2);

    Cli unknown = run(List.of("dead-letters", "list", "--broker", "mqtt", "--destination", deadLetterName()));
    assertThat(unknown.exit).isEqualTo(2);
    assertThat(unknown.err).contains("--broker", "mqtt").doesNotContain("Exception");

    Cli missing = cliOn(deadLetterName() + "-missing", "list");
    assertThat(missing.exit).as(missing.toString()).isEqualTo(1);
    assertThat(missing.err).contains("does not exist").hasLineCount(1);

    Cli noMatch = cli("replay", "--cause", "CONFLICT");
    assertThat(noMatch.exit).as(noMatch.toString()).isEqualTo(3);
    assertThat(noMatch.err).contains("no dead letter", "cause CONFLICT");
    Cli noSelection = cli("replay");
    assertThat(noSelection.exit).isEqualTo(2);
    assertThat(noSelection.err).contains("needs a selection");

    Cli list = cli("list");
    assertThat(list.out).contains("(not Idem's)");
    String madeId = idOfBrokerMade(listJson(), brokerMade);
    Cli notIdems = cli("replay", "--id", madeId);
    assertThat(notIdems.exit).as(notIdems.toString()).isEqualTo(1);
    assertThat(notIdems.err).contains("not dead-lettered by Idem");

    consumer.close();
    consumer = null;
    deleteSource();
    if (name.equals("kafka")) {
      await("topic deleted").atMost(TIMEOUT).until(() -> !KafkaFixture.shared().admin().listTopics().names().get()
          .contains(destination));
    }
    Cli gone = cli("replay", "--all");
    assertThat(gone.exit).as(gone.toString()).isEqualTo(1);
    assertThat(gone.err).contains("does not exist");
    assertThat(listJson().get("total").asInt()).as("nothing removed").isEqualTo(2);
    assertThat(db.effects(keys.get(0))).isZero();
  }

  /**
   * RabbitMQ: reading a quorum dead-letter queue returns every dead letter to it, and RabbitMQ 4.0
   * to 4.2 count each return against a delivery limit of 20 by default, then drop the message. The
   * demo declares its {@code .dlq} as idem-rabbitmq's topology does (on 4.x with {@code
   * x-delivery-limit=-1}): 25 reads leave every dead letter there. A quorum queue with the default
   * limit is refused before it is read where returns count (4.0 to 4.2), and read on 3.x (no
   * default limit) and 4.3+ (a multiple nack is not counted).
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rabbitmq"})
  void readingADeadLetterQueueManyTimesNeverUsesItsDeadLettersUp(String brokerName) throws Exception {
    open(brokerName, "reads");
    List<String> keys = deadLetter(2);
    for (int i = 0; i < 25; i++) {
      assertThat(remainingKeys()).as("read " + (i + 1)).containsExactlyInAnyOrderElementsOf(keys);
    }

    String limited = destination + "-limited";
    String version;
    try (com.rabbitmq.client.Connection c = rabbit().newConnection("idem-it-admin"); Channel ch = c.createChannel()) {
      version = c.getServerProperties().get("version").toString();
      ch.queueDeclare(limited, true, false, false, Map.of("x-queue-type", "quorum"));
    }
    try {
      Cli read = cliOn(limited, "list");
      boolean countsReturns = version.matches("^4\\.[0-2]\\..*");
      if (countsReturns) {
        assertThat(read.exit).as("RabbitMQ " + version + ": " + read).isEqualTo(1);
        assertThat(read.err).contains("delivery limit", "x-delivery-limit=-1");
      } else {
        assertThat(read.exit).as("RabbitMQ " + version + ": " + read).isZero();
      }
    } finally {
      try (com.rabbitmq.client.Connection c = rabbit().newConnection("idem-it-admin"); Channel ch = c.createChannel()) {
        ch.queueDelete(limited);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  private void open(String brokerName, String label) throws Exception {
    name = brokerName;
    broker = DemoBrokers.create(name);
    System.out.println("[it] " + broker.start());
    run = UUID.randomUUID().toString().substring(0, 8);
    db = ItDatabase.direct("it_dlt_" + label + "_" + name);
    destination = "idem-it-dlt-" + label + "-" + name + "-" + run;
    group = "idem-it-dlt-" + run;
    broker.createDestination(destination);
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .handler((message, session) -> {
          String key = message.header(Outbound.KEY_HEADER);
          if (failing.get() && failingKeys.contains(key)) {
            throw new NonRetryableException("order " + key + " cannot be charged: the card processor rejects it (test)");
          }
          try (PreparedStatement ps = session.getConnection().prepareStatement(
              "INSERT INTO it_effects (idem_key, attempt, payload_length) VALUES (?, ?, ?)")) {
            ps.setString(1, key);
            ps.setInt(2, message.deliveryAttempt());
            ps.setInt(3, message.payload().length);
            ps.executeUpdate();
          }
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(100))
            .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build())
        .listener(outcomes)
        .build();
    consumer = broker.consumer(destination, pipeline);
    consumer.start();
  }

  /** Publishes {@code n} orders that fail non-retryably and waits until all are dead-lettered. */
  private List<String> deadLetter(int n) {
    List<String> keys = new ArrayList<>();
    List<Outbound> messages = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String key = run + "-order-" + i;
      keys.add(key);
      failingKeys.add(key);
      messages.add(Outbound.keyed(key, payload(key)));
    }
    publishOrders(messages);
    await(n + " dead-lettered").atMost(TIMEOUT).until(() -> outcomes.count(ProcessingOutcome.DEAD_LETTERED) >= n
        && broker.deadLettered(destination) >= n && broker.pending(destination, group) == 0);
    return keys;
  }

  private static byte[] payload(String key) {
    return ("{\"orderId\":\"" + key + "\",\"amountCents\":1250}").getBytes(StandardCharsets.UTF_8);
  }

  private String deadLetterName() {
    return DeadLetterTool.deadLetterDestination(broker, destination);
  }

  /** The connection, store and destination options every command of this test gets. */
  private List<String> commonArgs() {
    return commonArgs(deadLetterName());
  }

  private List<String> commonArgs(String deadLetters) {
    List<String> args = new ArrayList<>(DeadLetterTool.options(broker, destination, db.schema));
    args.set(args.indexOf("--destination") + 1, deadLetters);
    if (name.equals("sqs")) {
      args.add("--sqs-hold=10"); // a killed tool's held dead letters come back after 10 s, not 5 minutes
    }
    if (name.equals("kafka")) {
      args.add("--kafka-group=idem-it-dlt-tool-" + run);
    }
    return args;
  }

  private Cli cli(String command, String... more) {
    return cliOn(deadLetterName(), command, more);
  }

  private Cli cliOn(String deadLetters, String command, String... more) {
    List<String> args = new ArrayList<>(List.of("dead-letters", command));
    args.addAll(List.of(more));
    args.addAll(commonArgs(deadLetters));
    return run(args);
  }

  private static Cli run(List<String> args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    picocli.CommandLine cmd = IdemCli.commandLine(new IdemCli());
    cmd.setOut(new PrintWriter(out, true));
    cmd.setErr(new PrintWriter(err, true));
    int exit = cmd.execute(args.toArray(String[]::new));
    return new Cli(exit, out.toString(), err.toString());
  }

  private record Cli(int exit, String out, String err) {
    @Override
    public String toString() {
      return "exit " + exit + "\n--- out\n" + out + "--- err\n" + err;
    }
  }

  private JsonNode listJson() throws Exception {
    Cli list = cli("list", "--output", "json");
    assertThat(list.exit).as(list.toString()).isZero();
    return JSON.readTree(list.out);
  }

  /** The keys of the dead letters still there. */
  private List<String> remainingKeys() throws Exception {
    List<String> keys = new ArrayList<>();
    for (JsonNode d : listJson().get("deadLetters")) {
      JsonNode reason = d.get("reason");
      keys.add(reason.isNull() ? "(not Idem's)" : reason.get("key").asText());
    }
    return keys;
  }

  private List<Integer> replayCounts() throws Exception {
    List<Integer> counts = new ArrayList<>();
    for (JsonNode d : listJson().get("deadLetters")) {
      counts.add(d.get("replayCount").asInt());
    }
    return counts;
  }

  private static String idOf(JsonNode list, String key) {
    for (JsonNode d : list.get("deadLetters")) {
      if (!d.get("reason").isNull() && key.equals(d.get("reason").get("key").asText())) {
        return d.get("id").asText();
      }
    }
    throw new AssertionError("no dead letter of key " + key + " in " + list);
  }

  private static String idOfBrokerMade(JsonNode list, String marker) {
    for (JsonNode d : list.get("deadLetters")) {
      if (d.get("reason").isNull()) {
        return d.get("id").asText();
      }
    }
    throw new AssertionError("no broker-made dead letter (" + marker + ") in " + list);
  }

  /** The producer sends the order again: a new delivery with a new broker id. */
  private void resendByProducer(String key) {
    publishOrders(List.of(Outbound.keyed(key, payload(key))));
  }

  /**
   * Publishes through the demo's broker, on RabbitMQ with a {@code message-id} per message (the
   * demo sets none, and the pipeline tells a producer's second send of a dead-lettered key from a
   * redelivery by it).
   */
  private void publishOrders(List<Outbound> messages) {
    if (!name.equals("rabbitmq")) {
      broker.publish(destination, messages);
      return;
    }
    try (com.rabbitmq.client.Connection c = rabbit().newConnection("idem-it-producer"); Channel ch = c.createChannel()) {
      ch.confirmSelect();
      for (Outbound m : messages) {
        ch.basicPublish("", destination, new AMQP.BasicProperties.Builder().messageId(UUID.randomUUID().toString())
            .headers(Map.of(Outbound.KEY_HEADER, m.text(Outbound.KEY_HEADER))).deliveryMode(2).build(), m.payload());
      }
      ch.waitForConfirmsOrDie(30_000);
    } catch (Exception e) {
      throw new IllegalStateException("publishing to " + destination + " failed: " + e, e);
    }
  }

  private List<String> strings(String sql, String arg) throws Exception {
    try (java.sql.Connection c = db.direct.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, arg);
      List<String> out = new ArrayList<>();
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    }
  }

  private ConnectionFactory rabbit() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(broker.connectionArgs().get(0).substring("--rabbitmq-uri=".length()));
    return f;
  }

  /** A dead letter as the broker itself moves one: the body only, no Idem header. */
  private String publishBrokerMadeDeadLetter() throws Exception {
    String marker = "broker-made-" + run;
    byte[] body = ("{\"note\":\"" + marker + "\"}").getBytes(StandardCharsets.UTF_8);
    switch (name) {
      case "kafka" -> {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.shared().bootstrapServers());
        try (KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
          producer.send(new ProducerRecord<>(deadLetterName(), body)).get();
        }
      }
      case "rabbitmq" -> {
        try (com.rabbitmq.client.Connection c = rabbit().newConnection("idem-it-broker"); Channel ch = c.createChannel()) {
          ch.confirmSelect();
          ch.basicPublish("", deadLetterName(), new AMQP.BasicProperties.Builder()
              .headers(Map.of("x-first-death-reason", "delivery_limit")).deliveryMode(2).build(), body);
          ch.waitForConfirmsOrDie(30_000);
        }
      }
      case "sqs" -> {
        SqsClient sqs = SqsFixture.shared().newClient();
        closing.add(sqs);
        String url = sqs.getQueueUrl(r -> r.queueName(deadLetterName())).queueUrl();
        sqs.sendMessage(r -> r.queueUrl(url).messageBody(new String(body, StandardCharsets.UTF_8)));
      }
      default -> {
        try (Connection c = ArtemisFixture.shared().connectionFactory().createConnection()) {
          Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
          s.createProducer(s.createQueue(deadLetterName())).send(s.createTextMessage(new String(body, StandardCharsets.UTF_8)));
        }
      }
    }
    return marker;
  }

  /** Deletes the source destination, keeping its dead-letter destination. */
  private void deleteSource() throws Exception {
    switch (name) {
      case "kafka" -> KafkaFixture.shared().deleteTopic(destination);
      case "rabbitmq" -> {
        try (com.rabbitmq.client.Connection c = rabbit().newConnection("idem-it-admin"); Channel ch = c.createChannel()) {
          ch.queueDelete(destination);
        }
      }
      case "sqs" -> {
        SqsClient sqs = SqsFixture.shared().newClient();
        closing.add(sqs);
        sqs.deleteQueue(r -> r.queueUrl(sqs.getQueueUrl(q -> q.queueName(destination)).queueUrl()));
      }
      default -> ArtemisFixture.shared().deleteQueue(destination);
    }
  }
}
