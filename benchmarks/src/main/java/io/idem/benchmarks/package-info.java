/** JMH benchmarks of Idem's processing pipeline; results in BENCHMARKS.md. */
@NullMarked
package io.idem.benchmarks;

import org.jspecify.annotations.NullMarked;
