package io.idem.spi;

import io.idem.IdempotencyKey;
import java.util.Objects;

/**
 * The claim the next transaction of a {@link TransactionRun} will begin with: its key and the
 * SHA-256 fingerprint of its payload (32 bytes). Given to the store just before a transaction
 * commits, so that the store may begin the next transaction and send this claim in the same round
 * trip as the COMMIT.
 *
 * @param key the key the next transaction's work claims first
 * @param payloadFingerprint SHA-256 of that message's payload, 32 bytes; not copied
 */
public record NextClaim(IdempotencyKey key, byte[] payloadFingerprint) {
  public NextClaim {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(payloadFingerprint, "payloadFingerprint");
  }
}
