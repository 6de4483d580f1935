/** Amazon SQS adapter (issue 4): not built yet. */
@NullMarked
package io.idem.sqs;

import org.jspecify.annotations.NullMarked;
