/**
 * The {@code idem-cli} command ({@link io.idem.cli.IdemCli}): {@code idem-cli dead-letters
 * list|show|replay|discard}, over {@code idem-dead-letters}. docs/DEAD-LETTERS.md is its manual.
 */
@NullMarked
package io.idem.cli;

import org.jspecify.annotations.NullMarked;
