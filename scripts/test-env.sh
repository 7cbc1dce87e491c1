#!/usr/bin/env bash
# What `make test` needs beyond Go and make, set up on this machine:
#
#   scripts/test-env.sh             install what is missing, and stop
#   scripts/test-env.sh CMD [ARG]…  that, then run CMD with a ZooKeeper
#
# Installs from Debian (apt-get update once, then apt-get install -y; as
# root, or through sudo) whatever is missing of:
#   - python3: the NodeManager's memory-enforcement test runs a python3 process;
#   - chromium: the web UI's browser tests drive headless Chromium;
#   - openjdk-17-jdk-headless (javac): the rpc package checks its SASL
#     DIGEST-MD5 (the AMRM token handshake) against the JDK's, which Hadoop's
#     IPC uses;
#   - zookeeper: the RM state store's ZooKeeper tests use a real server;
#   - krb5-kdc, krb5-admin-server, krb5-user and curl: the Kerberos tests
#     start a real MIT KDC (internal/kdctest) and call the RM's web port
#     with curl --negotiate.
#
# With a command, the ZooKeeper tests get a server: if $LOOM_TEST_ZK is set,
# that one (which must answer); else, if one answers on 127.0.0.1:2181, that
# one, left alone; else a private one this run starts on a free loopback port
# with a throwaway config and data dir, passes to the tests as $LOOM_TEST_ZK,
# and stops when CMD ends, however it ends (failure, Ctrl-C, TERM). The exit
# status is CMD's.
set -euo pipefail

say() { echo "test-env: $*" >&2; }
die() { say "$*"; exit 1; }

# zk_up HOST:PORT: a ZooKeeper answers there. A starting ZooKeeper can
# accept and never answer, so always time out.
zk_up() {
	local host=${1%:*} port=${1##*:}
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf srvr >&3 && grep -q Mode <&3' "$host" "$port" 2>/dev/null
}

# The ZooKeeper the tests would use without us; empty when it must be ours.
zk_existing() {
	if [ -n "${LOOM_TEST_ZK:-}" ]; then
		echo "$LOOM_TEST_ZK"
	elif zk_up 127.0.0.1:2181; then
		echo 127.0.0.1:2181
	fi
}

have_chromium() {
	# Where internal/browser looks.
	[ -n "${LOOM_CHROMIUM:-}" ] && return 0
	local b
	for b in /usr/bin/chromium chromium chromium-browser google-chrome; do
		command -v "$b" >/dev/null && return 0
	done
	return 1
}

install_missing() {
	local need_zk=$1 missing=()
	command -v python3 >/dev/null || missing+=(python3)
	have_chromium || missing+=(chromium)
	command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
	if [ "$need_zk" = yes ] && [ ! -r /usr/share/java/zookeeper.jar ]; then
		missing+=(zookeeper)
	fi
	[ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)
	[ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)
	command -v kinit >/dev/null || missing+=(krb5-user)
	command -v curl >/dev/null || missing+=(curl)
	if [ ${#missing[@]} -eq 0 ]; then
		say "nothing to install (python3, chromium, javac, a KDC, curl$([ "$need_zk" = yes ] && echo ", zookeeper") are here)"
		return
	fi
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null ||
			die "missing ${missing[*]}: install them as root (apt-get install -y ${missing[*]}); there is no sudo here"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null ||
		die "missing ${missing[*]} (Debian package names), and this is not a Debian machine: install them, then rerun"
	say "installing ${missing[*]} from Debian"
	# Another apt run (a machine's own updates at boot) holds apt's locks
	# for a while: wait for them, up to 10 minutes, rather than fail.
	local wait=(-o DPkg::Lock::Timeout=600)
	local tries=0
	until "${sudo[@]}" apt-get "${wait[@]}" update -q; do
		tries=$((tries + 1))
		[ $tries -lt 20 ] || die "apt-get update failed $tries times"
		say "apt-get update failed (another apt run holds its lists?); again in 30 s"
		sleep 30
	done
	local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -q "${missing[@]}")
	# Once more if it fails: another apt run's clean-up (Docker images'
	# docker-clean deletes downloaded .debs) can pull archives away mid-install.
	"${install[@]}" || { say "apt-get install failed; once more"; "${install[@]}"; }
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

zk_dir= zk_pid=
stop_zk() {
	if [ -n "$zk_pid" ] && kill -0 "$zk_pid" 2>/dev/null; then
		kill -TERM "$zk_pid" 2>/dev/null || true
		for _ in $(seq 1 40); do
			kill -0 "$zk_pid" 2>/dev/null || break
			sleep 0.25
		done
		kill -KILL "$zk_pid" 2>/dev/null || true
		wait "$zk_pid" 2>/dev/null || true
		say "stopped the private ZooKeeper on $LOOM_TEST_ZK"
	fi
	zk_pid=
	[ -z "$zk_dir" ] || rm -rf "$zk_dir"
	zk_dir=
}

# Starts a private standalone ZooKeeper from Debian's jars (not its service,
# which would be the machine's and listen on 2181) and exports LOOM_TEST_ZK.
start_zk() {
	local port java cp jar
	port=$(free_port)
	zk_dir=$(mktemp -d "${TMPDIR:-/tmp}/loom-test-zk.XXXXXX")
	mkdir "$zk_dir/data"
	cat >"$zk_dir/zoo.cfg" <<-EOF
		tickTime=2000
		dataDir=$zk_dir/data
		clientPort=$port
		clientPortAddress=127.0.0.1
		maxClientCnxns=0
		admin.enableServer=false
		4lw.commands.whitelist=srvr,ruok
	EOF
	cat >"$zk_dir/log4j.properties" <<-EOF
		log4j.rootLogger=INFO, CONSOLE
		log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
		log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
		log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p %c{1}: %m%n
	EOF
	cp="$zk_dir:/usr/share/java/zookeeper.jar"
	for jar in /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
		[ -r "$jar" ] && cp="$cp:$jar"
	done
	java=$(command -v java) || die "no java to run ZooKeeper with"
	# Started in the background from a script, java ignores Ctrl-C's
	# SIGINT: stop_zk, run on exit, is what ends it.
	"$java" -cp "$cp" -Dzookeeper.log.dir="$zk_dir" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$zk_dir/zoo.cfg" \
		>"$zk_dir/zookeeper.log" 2>&1 </dev/null &
	zk_pid=$!
	export LOOM_TEST_ZK=127.0.0.1:$port
	for _ in $(seq 1 120); do
		zk_up "$LOOM_TEST_ZK" && break
		kill -0 "$zk_pid" 2>/dev/null || break
		sleep 0.25
	done
	if ! zk_up "$LOOM_TEST_ZK"; then
		say "the private ZooKeeper did not come up on $LOOM_TEST_ZK; its log ends:"
		tail -n 30 "$zk_dir/zookeeper.log" >&2 || true
		exit 1
	fi
	say "started a private ZooKeeper (pid $zk_pid) on $LOOM_TEST_ZK for this run"
}

main() {
	if [ $# -eq 0 ]; then
		install_missing "$([ -n "$(zk_existing)" ] && echo no || echo yes)"
		return
	fi
	local zk
	zk=$(zk_existing)
	install_missing "$([ -n "$zk" ] && echo no || echo yes)"
	trap stop_zk EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if [ -z "$zk" ]; then
		start_zk
	elif zk_up "$zk"; then
		say "using the ZooKeeper already on $zk"
		export LOOM_TEST_ZK=$zk
	else
		die "no ZooKeeper answers on \$LOOM_TEST_ZK ($zk): start it, or unset LOOM_TEST_ZK to have one started"
	fi
	local rc=0
	"$@" || rc=$?
	exit "$rc"
}

main "$@"
