/** JMS adapter (issue 5): not built yet. */
@NullMarked
package io.idem.jms;

import org.jspecify.annotations.NullMarked;
