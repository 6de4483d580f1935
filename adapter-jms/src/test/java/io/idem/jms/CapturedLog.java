package io.idem.jms;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;

/** Records what one logger writes while open; events arrive from any thread. */
final class CapturedLog extends AppenderBase<ILoggingEvent> implements AutoCloseable {
  private final Logger logger;
  private final List<ILoggingEvent> events = new CopyOnWriteArrayList<>();

  private CapturedLog(Class<?> type) {
    this.logger = (Logger) LoggerFactory.getLogger(type);
    setContext(logger.getLoggerContext());
    start();
    logger.addAppender(this);
  }

  static CapturedLog of(Class<?> type) {
    return new CapturedLog(type);
  }

  @Override
  protected void append(ILoggingEvent event) {
    events.add(event);
  }

  /** The formatted messages logged at {@code level} so far. */
  List<String> messages(Level level) {
    return events.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Override
  public void close() {
    logger.detachAppender(this);
    stop();
  }
}
