package io.idem;

/**
 * What to do with a key longer than {@link IdempotencyKey#MAX_LENGTH} characters. A key is never
 * truncated: two keys sharing a prefix would then collide and one event would be skipped.
 */
public enum OversizedKeyPolicy {
  /** Dead-letter the message with cause {@link DeadLetterCause#INVALID_KEY}. The default. */
  REJECT,
  /**
   * Store {@code "sha256:" + hex(SHA-256(UTF-8 key))} (71 characters) instead. Collision-safe
   * for practical purposes, but the stored key no longer reads as the business id.
   */
  HASH
}
