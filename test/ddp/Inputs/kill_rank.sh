#!/bin/sh
# kill_rank.sh RANK SECONDS SIGNAL PROGRAM [ARGS...]
# Runs PROGRAM in place of this shell (exec keeps the pid). If this process is
# rank RANK (the RANK variable its launcher set), a background sleeper sends
# it SIGNAL after SECONDS seconds: KILL for a rank that dies without a word
# (a crashed or OOM-killed node), STOP for one that hangs with its
# connections open (only the peers' --timeout can notice it).
target=$1; seconds=$2; signal=$3; shift 3
if [ "$RANK" = "$target" ]; then
  ( sleep "$seconds"; kill -s "$signal" $$ 2>/dev/null ) &
fi
exec "$@"
