#!/bin/sh
# Round-robin trainer in the background, resumable and idempotent.
#   tools/train/run-background.sh [start [train.py options]]   start unless already running
#   tools/train/run-background.sh stop                         SIGTERM: it saves, then exits
#   tools/train/run-background.sh status
# Qualities: WAI_TRAIN_QUALITIES (default 1,3,5,7). Progress lives in tools/train/checkpoints/.
set -eu
DIR=$(cd "$(dirname "$0")" && pwd)
PIDFILE=$DIR/logs/driver.pid
PY=${WAI_TRAIN_PYTHON:-/usr/bin/python3}
QUALITIES=${WAI_TRAIN_QUALITIES:-1,3,5,7}

running() {
    [ -f "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'train\.py'
}

cmd=${1:-start}
[ $# -gt 0 ] && shift
mkdir -p "$DIR/logs" "$DIR/checkpoints"
case $cmd in
start)
    if running; then
        echo "already running (pid $pid)"
        exit 0
    fi
    nohup nice -n 15 "$PY" "$DIR/train.py" --qualities "$QUALITIES" --pid-file "$PIDFILE" "$@" \
        >> "$DIR/logs/driver.out" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
    echo "started pid $! (log: $DIR/logs/driver.log, q<N>.log)"
    ;;
stop)
    if ! running; then
        echo "not running"
        exit 0
    fi
    kill -TERM "$pid"
    # A step under load plus an evaluation and the saves can take a minute or two.
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
        sleep 1
        i=$((i + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "pid $pid still running after ${i}s" >&2
        exit 1
    fi
    echo "stopped pid $pid after ${i}s"
    ;;
status)
    if running; then echo "running (pid $pid)"; else echo "not running"; fi
    for f in "$DIR"/logs/q*.log; do
        [ -f "$f" ] && printf '%s: %s\n' "$(basename "$f" .log)" "$(grep ' it ' "$f" | tail -1)"
    done
    ;;
*)
    echo "usage: $0 [start [train.py options]|stop|status]" >&2
    exit 2
    ;;
esac
