# Sourced by bin/run and bin/drill (after bin/jdk.sh): build when stale, start the stubs and the
# service as background processes, wait until they answer. Callers set LOGS (a directory) and
# keep the pids in the array "pids".

build_if_stale() {
  if [ ! -f target/lastseat.jar ] || [ ! -f target/stubs/wiremock-standalone.jar ] || [ ! -d target/test-classes/lastseat/stubs ] \
     || [ -n "$(find src pom.xml -newer target/lastseat.jar -print -quit)" ]; then
    echo "Building lastseat (first run takes a minute)..."
    mvn -B -q -ntp -DskipTests package
  fi
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_stubs PORT: WireMock serving wiremock/ with the ledger, in-flight meter and ledger admin.
start_stubs() {
  "$JAVA" -cp target/stubs/wiremock-standalone.jar:target/test-classes wiremock.Run \
    --port "$1" --bind-address 127.0.0.1 --root-dir wiremock \
    --container-threads 200 --async-response-enabled=true --async-response-threads 100 \
    --max-request-journal-entries 10000 --disable-banner \
    --extensions lastseat.stubs.Ledger,lastseat.stubs.InFlight,lastseat.stubs.LedgerAdmin \
    > "$LOGS/wiremock.log" 2>&1 &
  pids+=($!)
}

# start_service PORT STUBS_PORT [-Dkey=value...]: lastseat with the given settings.
start_service() {
  local port="$1" stubs="$2"
  shift 2
  "$JAVA" --enable-preview \
    -Dserver.port="$port" \
    -Doutside.base-url="http://127.0.0.1:$stubs" \
    "$@" \
    ${LASTSEAT_JAVA_OPTS:-} \
    -jar target/lastseat.jar > "$LOGS/lastseat.log" 2>&1 &
  pids+=($!)
}

# wait_for URL NAME PID: until URL answers; stops the script when the process dies or 30 s pass.
wait_for() {
  for _ in $(seq 1 120); do
    curl -sf -o /dev/null "$1" && return 0
    kill -0 "$3" 2>/dev/null || { echo "$2 stopped while starting; see $LOGS/$2.log:" >&2; tail -20 "$LOGS/$2.log" >&2; exit 1; }
    sleep 0.25
  done
  echo "$2 did not answer $1 within 30 s; see $LOGS/$2.log" >&2
  exit 1
}

stop_all() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
