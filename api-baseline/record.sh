#!/usr/bin/env bash
# Records the API baseline of the published modules (docs/BUILD.md, "API compatibility"): builds
# them and stores, per module, a jar of its public classes (internal packages and resources left
# out) as api-baseline/<artifactId>.jar. `mvn verify` compares each module's jar with its baseline
# (japicmp) and fails on a binary- or source-incompatible change. Run it when a change of the
# public API is meant, and commit the jars with the change that needs them.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(core store-jdbc testkit fixtures adapter-kafka adapter-rabbitmq adapter-sqs adapter-jms
         dead-letters http spring-boot-starter)
list=$(IFS=,; echo "${modules[*]}")
mvn -B -q -ntp -DskipTests -Djapicmp.skip=true -pl "$list" -am package
for m in "${modules[@]}"; do
  artifact=$(sed -n 's:^  <artifactId>\(idem-[^<]*\)</artifactId>.*:\1:p' "$m/pom.xml")
  built=$(ls "$m/target/$artifact"-*.jar | grep -v -E -- '-(sources|javadoc|tests)\.jar$')
  work=$(mktemp -d)
  unzip -q "$built" '*.class' -d "$work"
  find "$work" -type d -name internal -prune -exec rm -rf {} +
  rm -f "api-baseline/$artifact.jar"
  jar --create --file "api-baseline/$artifact.jar" --date=2026-01-01T00:00:00Z -C "$work" .
  rm -rf "$work"
  echo "api-baseline/$artifact.jar"
done
