# Sourced by bin/run, bin/drill and bin/bench (after bin/jdk.sh): build when stale, start the stubs and
# the service as background processes, wait until they answer. Callers set LOGS (a directory) and
# keep the pids in the array "pids".

# Builds the service and its tools when a jar is missing or a source is newer than the last build.
build_if_stale() {
  if [ ! -f target/.built ] || [ ! -f target/lastseat.jar ] || [ ! -f tools/testkit/target/lastseat-testkit.jar ] \
     || [ ! -f tools/drills/target/lastseat-drills.jar ] || [ ! -f tools/bench/target/lastseat-bench.jar ] \
     || [ -n "$(find src tools pom.xml wiremock -type f -newer target/.built -not -path '*/target/*' -print -quit)" ]; then
    echo "Building lastseat and its tools (first run takes a minute)..."
    mvn -B -q -ntp -DskipTests package
    touch target/.built
  fi
}

# lastseat's own jars, as bin/run starts it: the servers bin/bench, bin/train and bin/drill start run from them
# too (ServerProcess, -Dlastseat.classpath), so that one AOT cache fits them all. Relative to the top directory.
SERVICE_CLASSPATH="target/lastseat.jar:target/libs/*"

# The benchmark (tools/bench) and its libraries: the load generator, the stubs, JMH.
BENCH_CLASSPATH="tools/bench/target/lastseat-bench.jar:tools/bench/target/libs/*"

# bench_main [-Dkey=value...] ARG...: the benchmark's main with its servers on the service's jars; leading -D
# options go to its JVM, the rest to it. That JVM, the load generator and the stubs on the cores of the servers it
# measures, compiles with C1 alone: with C2 its compiler took a third of two cores through the on-sale overload's
# first seconds and 8.7 s of CPU in its 20 s (docs/BENCHMARKS.md, "The benchmark's own compiler"). The servers and
# the hot event's raw claims run in JVMs of their own with every compiler. LASTSEAT_BENCH_JIT=c2: the old harness.
bench_main() {
  local jvm=()
  while [ $# -gt 0 ] && [[ "$1" == -D* ]]; do jvm+=("$1"); shift; done
  local jit=()
  case "${LASTSEAT_BENCH_JIT:-c1}" in
    c1) jit=(-XX:TieredStopAtLevel=1) ;;
    c2) ;;
    *) echo "LASTSEAT_BENCH_JIT is '$LASTSEAT_BENCH_JIT'; it takes c1 (the default) or c2." >&2; return 2 ;;
  esac
  "$JAVA" --enable-preview ${jit[@]+"${jit[@]}"} -Dlastseat.classpath="$SERVICE_CLASSPATH" ${jvm[@]+"${jvm[@]}"} \
    -cp "$BENCH_CLASSPATH" lastseat.bench.Bench "$@"
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_stubs PORT: WireMock serving wiremock/ with the truthful provider (the ledger), the in-flight
# meter and their admin API, all from the testkit's jar (tools/testkit).
start_stubs() {
  "$JAVA" -cp "tools/testkit/target/lastseat-testkit.jar:tools/testkit/target/libs/*" wiremock.Run \
    --port "$1" --bind-address 127.0.0.1 --root-dir wiremock \
    --container-threads 200 --async-response-enabled=true --async-response-threads 100 \
    --max-request-journal-entries 10000 --disable-banner \
    --extensions lastseat.testkit.Ledger,lastseat.testkit.InFlight,lastseat.testkit.LedgerAdmin \
    > "$LOGS/wiremock.log" 2>&1 &
  pids+=($!)
}

# start_service PORT ADMIN_PORT STUBS_PORT [-Dkey=value...]: lastseat with the given settings.
start_service() {
  local port="$1" admin="$2" stubs="$3"
  shift 3
  # The JVM options lastseat is measured with (the file says why); LASTSEAT_JAVA_OPTS, later, overrides them.
  "$JAVA" --enable-preview @src/main/resources/jvm.options \
    ${AOT_OPTS[@]+"${AOT_OPTS[@]}"} \
    -Dserver.port="$port" \
    -Daccess.admin-port="$admin" \
    -Doutside.base-url="http://127.0.0.1:$stubs" \
    "$@" \
    ${LASTSEAT_JAVA_OPTS:-} \
    -jar target/lastseat.jar > "$LOGS/lastseat.log" 2>&1 &
  pids+=($!)
}

# wait_for URL NAME PID: until URL answers; stops the script when the process dies or 60 s pass (lastseat
# warms up for about 10 s before it listens, longer on a busy machine: warm-up.* in application.yaml).
wait_for() {
  for _ in $(seq 1 240); do
    curl -sf -o /dev/null "$1" && return 0
    kill -0 "$3" 2>/dev/null || { echo "$2 stopped while starting; see $LOGS/$2.log:" >&2; tail -20 "$LOGS/$2.log" >&2; exit 1; }
    sleep 0.25
  done
  echo "$2 did not answer $1 within 60 s; see $LOGS/$2.log" >&2
  exit 1
}

# demo_keys LOG: sets OPERATOR_KEY and CLIENT_KEY to the demo's keys as the server that wrote LOG installed
# them (demo.create-keys): it states them in one line at start (Services.DEMO_KEYS_LOGGED), so nothing here
# reads application.yaml a second time. Stops the script when the line is missing.
demo_keys() {
  local line
  line="$(grep -F 'demo keys installed (public values, for trying lastseat only):' "$1" | tail -1 || true)"
  OPERATOR_KEY="$(sed -n 's/.* demo\.operator-key=\(ls_[0-9a-f_]*\).*/\1/p' <<<"$line")"
  CLIENT_KEY="$(sed -n 's/.* demo\.client-key=\(ls_[0-9a-f_]*\).*/\1/p' <<<"$line")"
  if [ -z "$OPERATOR_KEY" ] || [ -z "$CLIENT_KEY" ]; then
    echo "lastseat started but did not state the demo's keys in $1 (demo.create-keys on?)." >&2
    exit 1
  fi
}

# --- JDK 25's AOT cache (bin/train; docs/CONFIGURATION.md, "The AOT cache") ---

# aot_cache_file [DIR]: where bin/train keeps the cache of the build in DIR (default target). The name holds a
# digest of the JDK and of every jar lastseat runs from, names and bytes: the JVM checks a cache against the
# classpath's names, so a jar rebuilt in place would run with an older build's classes and profiles. A
# cache found under this name was made from these very jars.
aot_cache_file() {
  local dir="${1:-target}" digest
  digest="$({ "$JAVA" -version 2>&1
              (cd "$dir" && find lastseat.jar libs -name '*.jar' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); } \
            | sha256sum | cut -c1-16)"
  echo "$dir/aot/lastseat-$digest.aot"
}

# aot_options [DIR]: sets AOT_OPTS to the JVM options that start lastseat with the AOT cache of the build in DIR
# (default target), when bin/train made one and LASTSEAT_AOT is not "off", and AOT_NOTE to one line saying which.
aot_options() {
  AOT_OPTS=()
  local file
  case "${LASTSEAT_AOT:-on}" in
    on) ;;
    off) AOT_NOTE="AOT cache: off (LASTSEAT_AOT=off)."; return ;;
    *) echo "LASTSEAT_AOT must be on or off, not '$LASTSEAT_AOT'." >&2; exit 2 ;;
  esac
  if [[ "${LASTSEAT_JAVA_OPTS:-}" == *-XX:AOTCache* ]]; then
    AOT_NOTE="AOT cache: as LASTSEAT_JAVA_OPTS says."
    return
  fi
  file="$(aot_cache_file "${1:-target}")"
  if [ -f "$file" ]; then
    AOT_OPTS=(-XX:AOTCache="$file")
    AOT_NOTE="AOT cache: $file (bin/train made it for this build; LASTSEAT_AOT=off starts without it)."
  else
    AOT_NOTE="AOT cache: none for this build (bin/train makes one; see 'The AOT cache' in docs/CONFIGURATION.md)."
  fi
}

stop_all() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}

# --- PostgreSQL (bin/run --postgres): 127.0.0.1:5432, user postgres, trust auth, as the tests use it ---

PG_HOST=127.0.0.1
PG_PORT=5432
PG_USER=postgres

pg_up() {
  (exec 3<>"/dev/tcp/$PG_HOST/$PG_PORT") 2>/dev/null
}

# ensure_postgres: starts the local cluster (pg_ctlcluster, as bin/test does) when nothing answers on
# 127.0.0.1:5432; stops the script, saying how to start it, when that does not help.
ensure_postgres() {
  if ! pg_up && command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "PostgreSQL is not answering on $PG_HOST:$PG_PORT; starting it..."
    for version in $(ls /etc/postgresql 2>/dev/null); do
      pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null || true
    done
    for _ in $(seq 1 40); do pg_up && break; sleep 0.25; done
  fi
  if ! pg_up; then
    echo "Nothing answers on $PG_HOST:$PG_PORT: start PostgreSQL (e.g. 'pg_ctlcluster --skip-systemctl-redirect <version> main start')" \
         "with trust auth for user $PG_USER, or run bin/run without --postgres to use H2." >&2
    exit 1
  fi
}

# ensure_pg_database NAME: creates the database unless it exists. With psql when it is installed;
# otherwise with the PostgreSQL JDBC driver lastseat is built with (a Java source file run by the JDK),
# so no client tools are needed.
ensure_pg_database() {
  local name="$1"
  if command -v psql >/dev/null 2>&1; then
    if [ "$(psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -XAtqc "SELECT 1 FROM pg_database WHERE datname = '$name'")" != "1" ]; then
      psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -Xqc "CREATE DATABASE $name" >/dev/null
      echo "Created the PostgreSQL database $name."
    fi
    return
  fi
  local src
  src="$(mktemp -d -t lastseat-createdb.XXXXXX)"
  cat > "$src/CreateDatabase.java" <<'JAVA'
import java.sql.DriverManager;

class CreateDatabase {
    public static void main(String[] args) throws Exception {
        try (var c = DriverManager.getConnection(args[0], args[1], "");
             var exists = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
            exists.setString(1, args[2]);
            if (!exists.executeQuery().next()) {
                try (var create = c.createStatement()) {
                    create.execute("CREATE DATABASE " + args[2]);
                }
                System.out.println("Created the PostgreSQL database " + args[2] + ".");
            }
        }
    }
}
JAVA
  local status=0
  "$JAVA" -cp "target/lastseat.jar:target/libs/*" "$src/CreateDatabase.java" \
    "jdbc:postgresql://$PG_HOST:$PG_PORT/postgres" "$PG_USER" "$name" || status=$?
  rm -rf "$src"
  if [ "$status" -ne 0 ]; then
    echo "Could not create the PostgreSQL database $name on $PG_HOST:$PG_PORT as $PG_USER (see above)." >&2
    exit 1
  fi
}
