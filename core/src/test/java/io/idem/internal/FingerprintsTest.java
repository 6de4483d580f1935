package io.idem.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** SHA-256 from the per-thread digest: right values, no state carried from one call to the next. */
class FingerprintsTest {
  private static final String ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  private static final String EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

  @Test
  void repeatedCallsOnOneThreadAreIndependent() {
    byte[] abc = "abc".getBytes(StandardCharsets.US_ASCII);
    assertThat(hex(Fingerprints.sha256(abc))).isEqualTo(ABC_SHA256);
    assertThat(hex(Fingerprints.sha256(new byte[0]))).isEqualTo(EMPTY_SHA256);
    assertThat(hex(Fingerprints.sha256(abc))).isEqualTo(ABC_SHA256);
  }

  @Test
  void everyThreadGetsTheSameAnswer() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      Future<?>[] runs = new Future<?>[8];
      for (int i = 0; i < runs.length; i++) {
        runs[i] = pool.submit(() -> {
          for (int n = 0; n < 200; n++) {
            assertThat(hex(Fingerprints.sha256("abc".getBytes(StandardCharsets.US_ASCII)))).isEqualTo(ABC_SHA256);
          }
          return null;
        });
      }
      for (Future<?> run : runs) {
        run.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void hashedKeyIsPrefixedLowercaseHex() {
    assertThat(Fingerprints.hashedKey("abc")).isEqualTo("sha256:" + ABC_SHA256).hasSize(71);
  }

  private static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }
}
