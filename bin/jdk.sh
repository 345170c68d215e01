# Sourced by bin/run and bin/test: finds JDK 25 (StructuredTaskScope is a preview API of JDK 25)
# and sets JAVA_HOME, JAVA and MAVEN_OPTS. Prints one sentence and exits when there is none.

is_jdk25() {
  [ -x "$1/bin/javac" ] && "$1/bin/java" -version 2>&1 | head -1 | grep -q 'version "25'
}

if [ -n "${JAVA_HOME:-}" ] && is_jdk25 "$JAVA_HOME"; then
  :
else
  JAVA_HOME=""
  for candidate in /usr/lib/jvm/*; do
    if is_jdk25 "$candidate"; then JAVA_HOME="$candidate"; break; fi
  done
fi
if [ -z "$JAVA_HOME" ]; then
  echo "lastseat needs a JDK 25 and found none: set JAVA_HOME to one or install one under /usr/lib/jvm (e.g. Temurin 25)." >&2
  exit 1
fi
export JAVA_HOME
JAVA="$JAVA_HOME/bin/java"
export PATH="$JAVA_HOME/bin:$PATH"
# Maven 3.8 on JDK 25 warns about sun.misc.Unsafe without this.
export MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow ${MAVEN_OPTS:-}"
command -v mvn >/dev/null || { echo "lastseat builds with Maven (3.8 or newer) and found no mvn on PATH: install it (apt-get install maven)." >&2; exit 1; }
