#!/bin/sh
# status.sh COMMAND [ARGS...]: runs COMMAND, then prints "exit=N" (its exit
# status) and "seconds=S" (its wall time, whole seconds) on stdout; always
# exits 0, so a RUN line can FileCheck a command that must fail.
start=$(date +%s)
"$@"
status=$?
echo "exit=$status"
echo "seconds=$(( $(date +%s) - start ))"
exit 0
